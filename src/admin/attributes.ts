import { attributeAnswer, attributeListAnswer } from "../domain/answers/panels";
import { defineAttributeBody } from "../domain/panel-screens";
import { conflict, invalidField } from "../lib/http/errors";
import { defineAttribute as defineNewAttribute } from "../services/attributes/define";
import { listAttributes } from "../store/attributes";
import { definePanelRoute } from "./route";

const defineAttribute = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/attributes/:name",
  role: "marketer",
  response: attributeAnswer,
  summary: "Add an attribute to the panel's schema (names are stored upper-case); repeating it is harmless",
  body: defineAttributeBody,
  async handle({ env, path, body, panel, db }) {
    const outcome = await defineNewAttribute(db, panel.id, path.name, body.type);
    if (!outcome.ok && outcome.kind === "bad_name") throw invalidField("name", "must be a letter, then up to 63 letters, digits or underscores");
    if (!outcome.ok) {
      throw conflict(`type: attribute ${outcome.name} already exists with type ${outcome.type}`, [
        { field: "type", message: `attribute ${outcome.name} already has type ${outcome.type}` },
      ]);
    }
    return outcome.attribute;
  },
});

const readAttributes = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/attributes",
  role: "viewer",
  response: attributeListAnswer,
  summary: "The panel's attribute schema",
  async handle({ env, panel, db }) {
    return { attributes: await listAttributes(db, panel.id) };
  },
});

export const attributeRoutes = [defineAttribute, readAttributes];
