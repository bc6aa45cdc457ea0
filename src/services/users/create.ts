import { refused, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import type { ShardDb } from "../../store/shards";
import { insertUser, type User } from "../../store/users";
import { generateApiKey, hashApiKey } from "../access/api-keys";
import { recordAudit, type Auditor } from "../audit/record";

/** The user with its key; refused (conflict) when the panel has a user with the email. */
export type CreateUserOutcome = Result<{ user: User; apiKey: string }>;

/** Adds an API user to the panel with a new key, shown once in the answer and stored as its hash. */
export async function createUser(env: Env, db: ShardDb, panelId: string, email: string, name: string | null, by: Auditor): Promise<CreateUserOutcome> {
  const apiKey = generateApiKey();
  const user: User = { id: newId("usr"), panelId, email, name, disabled: false, createdAt: Date.now() };
  if (!(await insertUser(env.DB, user, await hashApiKey(apiKey)))) return refused("conflict", [{ field: "email", message: "already in use in this panel" }], `email: the panel already has a user with email ${email}`);
  await recordAudit(db, panelId, by, "user.created", user.id, { email: user.email });
  return succeeded({ user, apiKey });
}
