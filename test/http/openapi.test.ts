import { describe, expect, it } from "vitest";
import { call } from "../helpers";

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
});
