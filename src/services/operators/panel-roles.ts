import type { OperatorRole } from "../../domain/operators";
import { findOperatorByEmail, panelMember, panelMembers, removeRole, setRole, setRoleStatement, type PanelMember } from "../../store/operators";
import { revokeOpenInvitationStatement } from "../../store/invitations";
import type { ControlDb, ShardDb } from "../../store/shards";
import { refused, succeeded, type Result } from "../../lib/problems";
import { recordAudit, type Auditor } from "../audit/record";
import { createOperator } from "./sessions";

// Who may work in a panel, with which role. Operators live in the control database; the
// panel's audit log in its shard.

/** Refused when a new email comes without a password (invalid), the operator could not be created nor found (conflict: a race with a removal), or is the panel's last owner and the role given is not owner (conflict). */
export type AddOperatorOutcome = Result<PanelMember>;

/** Gives an operator a role in the panel, creating the operator first when the email is new (then a password is needed). */
export async function addPanelOperator(
  env: Env,
  db: ShardDb,
  panelId: string,
  input: { email: string; name: string | null; password?: string | undefined; role: OperatorRole },
  by: Auditor,
): Promise<AddOperatorOutcome> {
  const now = Date.now();
  let operator = await findOperatorByEmail(env.DB, input.email);
  if (!operator) {
    if (!input.password) return refused("invalid", [{ field: "password", message: "is required for a new operator" }], "password: a new operator needs a password");
    const created = await createOperator(env.DB, input.email, input.name, input.password, now);
    if (created.created) operator = { ...created.operator, passwordHash: "" };
    else operator = await findOperatorByEmail(env.DB, input.email);
  }
  if (!operator) return refused("conflict", [], `email: ${input.email} could not be added; try again`);
  // A member added again has their role changed: under changeOperatorRole's rule, or this would demote the last owner.
  if (input.role !== "owner" && (await isLastOwner(env.DB, panelId, operator.id))) return lastOwner();
  // An invitation still open for the address would, accepted later, set its role again: raise
  // the one given here, or let the operator back in once removed. The role given closes it.
  await env.DB.batch([setRoleStatement(env.DB, operator.id, panelId, input.role, now), revokeOpenInvitationStatement(env.DB, panelId, operator.email, now)]);
  await recordAudit(db, panelId, by, "operator.added", operator.id, { email: operator.email, role: input.role });
  return succeeded((await panelMember(env.DB, panelId, operator.id))!);
}

/** Refused when the operator has no role in the panel (not_found) or is its last owner (conflict). */
export type RoleChangeOutcome<T> = Result<T>;

const noSuchOperator = (operatorId: string) => refused("not_found", [], `No operator with id "${operatorId}" in this panel`);
const lastOwner = () => refused("conflict", [], "The panel's last owner cannot be removed or demoted; make someone else owner first");

/** A panel keeps at least one owner, so someone can always manage it without the admin token. */
async function isLastOwner(db: ControlDb, panelId: string, operatorId: string): Promise<boolean> {
  const owners = (await panelMembers(db, panelId)).filter((member) => member.role === "owner");
  return owners.length === 1 && owners[0]!.id === operatorId;
}

/** Changes an operator's role in the panel; the last owner stays owner. */
export async function changeOperatorRole(env: Env, db: ShardDb, panelId: string, operatorId: string, role: OperatorRole, by: Auditor): Promise<RoleChangeOutcome<PanelMember>> {
  const member = await panelMember(env.DB, panelId, operatorId);
  if (!member) return noSuchOperator(operatorId);
  if (role !== "owner" && (await isLastOwner(env.DB, panelId, operatorId))) return lastOwner();
  await setRole(env.DB, operatorId, panelId, role, Date.now());
  await recordAudit(db, panelId, by, "operator.role_changed", operatorId, { email: member.email, from: member.role, to: role });
  return succeeded((await panelMember(env.DB, panelId, operatorId))!);
}

/** Takes an operator out of the panel (the operator stays); never the last owner. */
export async function removePanelOperator(env: Env, db: ShardDb, panelId: string, operatorId: string, by: Auditor): Promise<RoleChangeOutcome<true>> {
  const member = await panelMember(env.DB, panelId, operatorId);
  if (!member) return noSuchOperator(operatorId);
  if (await isLastOwner(env.DB, panelId, operatorId)) return lastOwner();
  await removeRole(env.DB, operatorId, panelId);
  await recordAudit(db, panelId, by, "operator.removed", operatorId, { email: member.email, role: member.role });
  return succeeded(true);
}
