import { attributeAnswer, attributeListAnswer } from "../domain/answers/panels";
import { ATTRIBUTE_NAME_PATTERN, canonicalAttributeName } from "../domain/attributes";
import { defineAttributeBody } from "../domain/panel-screens";
import { conflict, invalidField } from "../lib/http/errors";
import { listAttributes, putAttribute } from "../store/attributes";
import { definePanelRoute } from "./route";

const defineAttribute = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/attributes/:name",
  role: "marketer",
  response: attributeAnswer,
  summary: "Add an attribute to the panel's schema (names are stored upper-case); repeating it is harmless",
  body: defineAttributeBody,
  async handle({ env, path, body, panel, db }) {
    const name = canonicalAttributeName(path.name);
    if (!ATTRIBUTE_NAME_PATTERN.test(name)) {
      throw invalidField("name", "must be a letter, then up to 63 letters, digits or underscores");
    }
    const stored = await putAttribute(db, panel.id, { name, type: body.type }, Date.now());
    // Retyping would leave stored values of the old type behind, so a type is fixed once set.
    if (stored.type !== body.type) {
      throw conflict(`type: attribute ${name} already exists with type ${stored.type}`, [
        { field: "type", message: `attribute ${name} already has type ${stored.type}` },
      ]);
    }
    return stored;
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
