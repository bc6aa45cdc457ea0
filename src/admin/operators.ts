import { operatorAnswer, operatorListAnswer, operatorRemovedAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { addOperatorBody, changeOperatorBody } from "../domain/operators";
import { unwrap } from "../lib/http/errors";
import { addPanelOperator, changeOperatorRole, removePanelOperator } from "../services/operators/panel-roles";
import { panelMembers, type PanelMember } from "../store/operators";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

function memberView(member: PanelMember) {
  return { id: member.id, email: member.email, name: member.name, role: member.role, disabled: member.disabled, created_at: isoTime(member.createdAt) };
}

const listOperators = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/operators",
  role: NEEDS.team,
  response: operatorListAnswer,
  summary: "The operators who may sign in to the panel, with their roles",
  async handle({ env, path, panel }) {
    return { operators: (await panelMembers(env.DB, panel.id)).map(memberView) };
  },
});

// The admin token's alone: a session that chose a new account's password could sign in as it
// wherever that address is given a role later, and an existing account would get a role it never
// agreed to. Owners invite instead, so only the address's holder sets its password.
const addOperator = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/operators",
  role: "admin",
  response: operatorAnswer,
  summary:
    "Give an operator a role in the panel; a new email creates the operator with the password given (ADMIN_TOKEN only: it creates a panel's first owner this way; owners invite instead)",
  status: 201,
  body: addOperatorBody,
  async handle({ env, db, caller, path, body, panel }) {
    return memberView(unwrap(await addPanelOperator(env, db, panel.id, { email: body.email, name: body.name ?? null, password: body.password, role: body.role }, auditorOf(caller))));
  },
});

const changeOperator = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/operators/:operator",
  role: NEEDS.team,
  response: operatorAnswer,
  summary: "Change an operator's role in the panel",
  body: changeOperatorBody,
  async handle({ env, db, caller, path, body, panel }) {
    return memberView(unwrap(await changeOperatorRole(env, db, panel.id, path.operator, body.role, auditorOf(caller))));
  },
});

const removeOperator = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/operators/:operator",
  role: NEEDS.team,
  response: operatorRemovedAnswer,
  summary: "Take an operator's role in the panel away; their session no longer reaches it",
  async handle({ env, db, caller, path, panel }) {
    unwrap(await removePanelOperator(env, db, panel.id, path.operator, auditorOf(caller)));
    return { removed: true };
  },
});

export const operatorRoutes = [listOperators, addOperator, changeOperator, removeOperator];
