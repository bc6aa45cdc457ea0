import { operatorAnswer, operatorListAnswer, operatorRemovedAnswer } from "../domain/answers/panels";
import { addOperatorBody, changeOperatorBody } from "../domain/operators";
import { ApiError, conflict, notFound } from "../lib/http/errors";
import { addPanelOperator, changeOperatorRole, removePanelOperator } from "../services/operators/panel-roles";
import { panelMembers, type PanelMember } from "../store/operators";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

function memberView(member: PanelMember) {
  return { id: member.id, email: member.email, name: member.name, role: member.role, disabled: member.disabled, created_at: isoTime(member.createdAt) };
}

function noSuchOperator(operatorId: string | undefined) {
  return notFound(`No operator with id "${operatorId}" in this panel`);
}

function lastOwner() {
  return conflict("The panel's last owner cannot be removed or demoted; make someone else owner first");
}

const listOperators = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/operators",
  role: "owner",
  response: operatorListAnswer,
  summary: "The operators who may sign in to the panel, with their roles",
  async handle({ env, path, panel }) {
    return { operators: (await panelMembers(env.DB, panel.id)).map(memberView) };
  },
});

const addOperator = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/operators",
  role: "owner",
  response: operatorAnswer,
  summary: "Give an operator a role in the panel; a new email creates the operator with the password given (ADMIN_TOKEN creates a panel's first owner this way)",
  status: 201,
  body: addOperatorBody,
  async handle({ env, db, caller, path, body, panel }) {
    const outcome = await addPanelOperator(env, db, panel.id, { email: body.email, name: body.name ?? null, password: body.password, role: body.role }, auditorOf(caller));
    if (!outcome.ok && outcome.kind === "password_needed") {
      throw new ApiError(400, "password: a new operator needs a password", [{ field: "password", message: "is required for a new operator" }]);
    }
    if (!outcome.ok) throw conflict(`email: ${body.email} could not be added; try again`);
    return memberView(outcome.member);
  },
});

const changeOperator = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/operators/:operator",
  role: "owner",
  response: operatorAnswer,
  summary: "Change an operator's role in the panel",
  body: changeOperatorBody,
  async handle({ env, db, caller, path, body, panel }) {
    const outcome = await changeOperatorRole(env, db, panel.id, path.operator, body.role, auditorOf(caller));
    if (!outcome.ok) throw outcome.kind === "missing" ? noSuchOperator(path.operator) : lastOwner();
    return memberView(outcome.value);
  },
});

const removeOperator = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/operators/:operator",
  role: "owner",
  response: operatorRemovedAnswer,
  summary: "Take an operator's role in the panel away; their session no longer reaches it",
  async handle({ env, db, caller, path, panel }) {
    const outcome = await removePanelOperator(env, db, panel.id, path.operator, auditorOf(caller));
    if (!outcome.ok) throw outcome.kind === "missing" ? noSuchOperator(path.operator) : lastOwner();
    return { removed: true };
  },
});

export const operatorRoutes = [listOperators, addOperator, changeOperator, removeOperator];
