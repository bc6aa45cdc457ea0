import type { OperatorRole } from "../../domain/operators";
import { findOperatorByEmail, panelMember, panelMembers, removeRole, setRole, type PanelMember } from "../../store/operators";
import type { ControlDb, ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { createOperator } from "./sessions";

// Who may work in a panel, with which role. Operators live in the control database; the
// panel's audit log in its shard.

export type AddOperatorOutcome = { ok: true; member: PanelMember } | { ok: false; kind: "password_needed" } | { ok: false; kind: "not_added" };

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
    if (!input.password) return { ok: false, kind: "password_needed" };
    const created = await createOperator(env.DB, input.email, input.name, input.password, now);
    if (created.created) operator = { ...created.operator, passwordHash: "" };
    else operator = await findOperatorByEmail(env.DB, input.email);
  }
  if (!operator) return { ok: false, kind: "not_added" };
  await setRole(env.DB, operator.id, panelId, input.role, now);
  await recordAudit(db, panelId, by, "operator.added", operator.id, { email: operator.email, role: input.role });
  return { ok: true, member: (await panelMember(env.DB, panelId, operator.id))! };
}

export type RoleChangeOutcome<T> = { ok: true; value: T } | { ok: false; kind: "missing" } | { ok: false; kind: "last_owner" };

/** A panel keeps at least one owner, so someone can always manage it without the admin token. */
async function isLastOwner(db: ControlDb, panelId: string, operatorId: string): Promise<boolean> {
  const owners = (await panelMembers(db, panelId)).filter((member) => member.role === "owner");
  return owners.length === 1 && owners[0]!.id === operatorId;
}

/** Changes an operator's role in the panel; the last owner stays owner. */
export async function changeOperatorRole(env: Env, db: ShardDb, panelId: string, operatorId: string, role: OperatorRole, by: Auditor): Promise<RoleChangeOutcome<PanelMember>> {
  const member = await panelMember(env.DB, panelId, operatorId);
  if (!member) return { ok: false, kind: "missing" };
  if (role !== "owner" && (await isLastOwner(env.DB, panelId, operatorId))) return { ok: false, kind: "last_owner" };
  await setRole(env.DB, operatorId, panelId, role, Date.now());
  await recordAudit(db, panelId, by, "operator.role_changed", operatorId, { email: member.email, from: member.role, to: role });
  return { ok: true, value: (await panelMember(env.DB, panelId, operatorId))! };
}

/** Takes an operator out of the panel (the operator stays); never the last owner. */
export async function removePanelOperator(env: Env, db: ShardDb, panelId: string, operatorId: string, by: Auditor): Promise<RoleChangeOutcome<true>> {
  const member = await panelMember(env.DB, panelId, operatorId);
  if (!member) return { ok: false, kind: "missing" };
  if (await isLastOwner(env.DB, panelId, operatorId)) return { ok: false, kind: "last_owner" };
  await removeRole(env.DB, operatorId, panelId);
  await recordAudit(db, panelId, by, "operator.removed", operatorId, { email: member.email, role: member.role });
  return { ok: true, value: true };
}
