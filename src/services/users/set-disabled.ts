import type { ShardDb } from "../../store/shards";
import { setUserDisabled as storeSetDisabled, type User } from "../../store/users";
import { recordAudit, type Auditor } from "../audit/record";

/** Disables or enables an API user (a disabled user's key is refused); null when there is no such user. */
export async function setUserDisabled(env: Env, db: ShardDb, panelId: string, userId: string, disabled: boolean, by: Auditor): Promise<User | null> {
  const user = await storeSetDisabled(env.DB, panelId, userId, disabled, Date.now());
  if (!user) return null;
  await recordAudit(db, panelId, by, disabled ? "user.disabled" : "user.enabled", user.id, { email: user.email });
  return user;
}
