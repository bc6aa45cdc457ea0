import { attributeAnswer, attributeListAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { defineAttributeBody } from "../domain/panel-screens";
import { unwrap } from "../lib/http/errors";
import { defineAttribute as defineNewAttribute } from "../services/attributes/define";
import { listAttributes } from "../store/attributes";
import { mirrorShards } from "../services/access/partitions";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

const defineAttribute = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/attributes/:name",
  role: NEEDS.audience,
  response: attributeAnswer,
  summary: "Add an attribute to the panel's schema (names are stored upper-case); repeating it is harmless",
  body: defineAttributeBody,
  async handle({ env, caller, path, body, panel, db }) {
    return unwrap(await defineNewAttribute(db, panel.id, mirrorShards(env, panel), path.name, body.type, auditorOf(caller)));
  },
});

const readAttributes = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/attributes",
  role: NEEDS.read,
  response: attributeListAnswer,
  summary: "The panel's attribute schema",
  async handle({ env, panel, db }) {
    return { attributes: await listAttributes(db, panel.id) };
  },
});

export const attributeRoutes = [defineAttribute, readAttributes];
