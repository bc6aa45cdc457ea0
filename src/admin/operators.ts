import { operatorAnswer, operatorListAnswer, operatorRemovedAnswer } from "../domain/answers/panels";
import type { ControlDb } from "../store/shards";
import { addOperatorBody, changeOperatorBody } from "../domain/operators";
import { ApiError, conflict, notFound } from "../lib/http/errors";
import { createOperator } from "../services/operators/sessions";
import { findOperatorByEmail, panelMember, panelMembers, removeRole, setRole, type PanelMember } from "../store/operators";
import { isoTime } from "../store/sql";
import { audited } from "./audit";
import { definePanelRoute } from "./route";

function memberView(member: PanelMember) {
  return { id: member.id, email: member.email, name: member.name, role: member.role, disabled: member.disabled, created_at: isoTime(member.createdAt) };
}

function noSuchOperator(operatorId: string | undefined) {
  return notFound(`No operator with id "${operatorId}" in this panel`);
}

/** A panel keeps at least one owner, so someone can always manage it without the admin token. */
async function refuseLastOwner(db: ControlDb, panelId: string, operatorId: string): Promise<void> {
  const members = await panelMembers(db, panelId);
  const owners = members.filter((member) => member.role === "owner");
  if (owners.length === 1 && owners[0]!.id === operatorId) throw conflict("The panel's last owner cannot be removed or demoted; make someone else owner first");
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
    const now = Date.now();
    let operator = await findOperatorByEmail(env.DB, body.email);
    if (!operator) {
      if (!body.password) {
        throw new ApiError(400, "password: a new operator needs a password", [{ field: "password", message: "is required for a new operator" }]);
      }
      const created = await createOperator(env.DB, body.email, body.name ?? null, body.password, now);
      if (created.created) operator = { ...created.operator, passwordHash: "" };
      else operator = await findOperatorByEmail(env.DB, body.email);
    }
    if (!operator) throw conflict(`email: ${body.email} could not be added; try again`);
    await setRole(env.DB, operator.id, panel.id, body.role, now);
    await audited({ db, caller, panel }, "operator.added", operator.id, { email: operator.email, role: body.role });
    return memberView((await panelMember(env.DB, panel.id, operator.id))!);
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
    const member = await panelMember(env.DB, panel.id, path.operator);
    if (!member) throw noSuchOperator(path.operator);
    if (body.role !== "owner") await refuseLastOwner(env.DB, panel.id, path.operator!);
    await setRole(env.DB, path.operator!, panel.id, body.role, Date.now());
    await audited({ db, caller, panel }, "operator.role_changed", path.operator, { email: member.email, from: member.role, to: body.role });
    return memberView((await panelMember(env.DB, panel.id, path.operator!))!);
  },
});

const removeOperator = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/operators/:operator",
  role: "owner",
  response: operatorRemovedAnswer,
  summary: "Take an operator's role in the panel away; their session no longer reaches it",
  async handle({ env, db, caller, path, panel }) {
    const member = await panelMember(env.DB, panel.id, path.operator);
    if (!member) throw noSuchOperator(path.operator);
    await refuseLastOwner(env.DB, panel.id, path.operator!);
    await removeRole(env.DB, path.operator!, panel.id);
    await audited({ db, caller, panel }, "operator.removed", path.operator, { email: member.email, role: member.role });
    return { removed: true };
  },
});

export const operatorRoutes = [listOperators, addOperator, changeOperator, removeOperator];
