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
    expect(doc.paths["/{version}/activity/batch/{client_id}"].post.responses["207"]).toBeDefined();
    expect(doc.paths["/admin/v1/panels/{panel}/activities"].post).toBeDefined();
    expect(doc.paths["/admin/v1/panels/{panel}/contacts/{key}/events"].get.parameters.map((p: any) => p.name)).toEqual(["panel", "key", "limit", "cursor"]);
  });
});
