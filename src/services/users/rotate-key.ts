import type { ShardDb } from "../../store/shards";
import { getUser, replaceKeyHash } from "../../store/users";
import { generateApiKey, hashApiKey } from "../access/api-keys";
import { recordAudit, type Auditor } from "../audit/record";

/** Gives an API user a new key (the old one stops working); null when there is no such user. */
export async function rotateUserKey(env: Env, db: ShardDb, panelId: string, userId: string, by: Auditor): Promise<{ apiKey: string } | null> {
  const apiKey = generateApiKey();
  if (!(await replaceKeyHash(env.DB, panelId, userId, await hashApiKey(apiKey), Date.now()))) return null;
  const user = await getUser(env.DB, panelId, userId);
  await recordAudit(db, panelId, by, "user.key_rotated", userId, { email: user?.email ?? null });
  return { apiKey };
}
