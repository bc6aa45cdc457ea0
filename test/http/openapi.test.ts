import { describe, expect, it } from "vitest";
import { call } from "../support/helpers";

describe("/openapi.json", () => {
  it("describes the envelope operations and the admin routes", async () => {
    const response = await call("/openapi.json");
    expect(response.status).toBe(200);
    const doc = (await response.json()) as any;
    expect(doc.openapi).toBe("3.1.0");
    const alternatives = doc.paths["/apiv2"].post.requestBody.content["application/json"].schema.oneOf;
    const titles = alternatives.map((a: { title: string }) => a.title);
    expect(titles).toEqual(expect.arrayContaining(["contact/add", "contact/view", "contact/update", "contact/delete", "lists/add", "lists/edit", "lists/getall", "lists/delete", "lists/emptylist"]));
    const add = alternatives.find((a: { title: string }) => a.title === "contact/add");
    expect(add.required).toEqual(expect.arrayContaining(["type", "activity", "apikey", "data"]));
    expect(doc.paths["/admin/v1/panels"].post.requestBody.content["application/json"].schema.properties.name).toBeDefined();
    expect(doc.paths["/admin/v1/panels/{panel}/attributes/{name}"].put).toBeDefined();
  });

  it("describes single activity, its batch form, and the activity admin routes", async () => {
    const doc = (await (await call("/openapi.json")).json()) as any;
    const single = doc.paths["/{version}/activity/singleactivity/{client_id}"].post;
    expect(Object.keys(single.requestBody.content["application/json"].schema.properties)).toEqual(
      expect.arrayContaining(["activityid", "actvityid", "cts", "timestamp", "identity", "uniqueid", "activity_source", "activity_params", "guid"]),
    );
    expect(doc.paths["/{version}/activity/batch/{client_id}"].post.responses["207"]).toBeUndefined();
    const upload = doc.paths["/v1/activity/upload"].post;
    const item = upload.requestBody.content["application/json"].schema.items;
    expect(item.required).toEqual(["activity_name"]);
    expect(Object.keys(item.properties)).toEqual(
      expect.arrayContaining(["activity_name", "asset_id", "timestamp", "identity", "uniqueid", "activity_source", "activity_params"]),
    );
    expect(upload.requestBody.content["application/json"].schema.maxItems).toBe(1000);
    expect(upload.parameters.map((p: any) => p.name)).toEqual(["apikey", "X-Netcore-Asset-Id", "Idempotency-Key"]);
    expect(Object.keys(upload.responses)).toEqual(expect.arrayContaining(["200", "400", "401"]));
    expect(doc.paths["/admin/v1/panels/{panel}/activities"].post).toBeDefined();
    expect(doc.paths["/admin/v1/panels/{panel}/contacts/{key}/events"].get.parameters.map((p: any) => p.name)).toEqual(["panel", "key", "limit", "cursor"]);
  });

  it("describes the members of the broadcast request and of a journey definition", async () => {
    const doc = (await (await call("/openapi.json")).json()) as any;
    const alternatives = doc.paths["/apiv2"].post.requestBody.content["application/json"].schema.oneOf;
    const publish = alternatives.find((a: { title: string }) => a.title === "email_broadcast/upload_contact_and_publish");
    const data = publish.properties.data;
    expect(Object.keys(data.properties)).toEqual([
      "contacts_upload_source", "list_name", "campaign_name", "subject_line", "sender_name", "sender_email_id",
      "contacts_upload_source_file_md5", "check_rowcount", "tags", "schedule_date", "source_file", "source_code", "notify_me",
    ]);
    expect(data.required).toEqual(["contacts_upload_source", "list_name", "campaign_name", "subject_line", "sender_name", "sender_email_id", "schedule_date", "notify_me"]);
    expect(data.properties.schedule_date.description).toMatch(/YYYY-MM-DD HH:mm:SS/);
    const journey = doc.paths["/admin/v1/panels/{panel}/journeys"].post.requestBody.content["application/json"].schema;
    expect(Object.keys(journey.properties)).toEqual(["name", "trigger", "filter", "steps", "goal", "layout"]);
    expect(journey.required).not.toContain("layout");
    expect(journey.properties.steps.items.oneOf.length).toBe(8);
  });
});
