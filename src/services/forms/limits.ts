import { erasedIdentifier } from "../../domain/erasure";
import { FORM_RATE_WINDOW_MS, SUBMISSIONS_PER_ADDRESS, SUBMISSIONS_PER_IP } from "../../domain/signup-forms";
import { refused, type Result } from "../../lib/problems";
import { ANY_PANEL, countFormAttemptsStatement, formLimitRefusal } from "../../store/form-attempts";
import type { ShardDb } from "../../store/shards";

// A signup form's limits on a valid submission (decision 0049, option A): counted on the
// contact's shard, first in the batch that writes the submission, so they cost no round trip of
// their own and a refused submission writes nothing. The per-IP limit is counted per shard.

export const tooManyFromIp = () => refused<never>("rate_limited", [], "Too many signups from this address; wait a few minutes and try again");
export const tooManyForAddress = () => refused<never>("rate_limited", [], "Too many signups for this address; wait a few minutes and try again");

/**
 * The count of a valid submission for key `key` (from `ip`, when known), for the front of the
 * batch that writes it. Subjects are erased identifiers (a hash salted with the panel, or with
 * no panel for an IP, as erasure keeps an erased address), so the shard keeps no address or IP.
 */
export async function formLimitsStatement(db: ShardDb, panelId: string, key: string, ip: string | null, now: number): Promise<D1PreparedStatement> {
  const [ipSubject, keySubject] = await Promise.all([ip ? erasedIdentifier(ANY_PANEL, ip) : null, erasedIdentifier(panelId, key)]);
  const attempts = [
    // The IP first: a submission past both limits is refused by its IP's, as before.
    ...(ipSubject ? [{ panelId: ANY_PANEL, subject: ipSubject, limit: SUBMISSIONS_PER_IP }] : []),
    { panelId, subject: keySubject, limit: SUBMISSIONS_PER_ADDRESS },
  ];
  return countFormAttemptsStatement(db, attempts, now, now - FORM_RATE_WINDOW_MS);
}

/** Runs a submission's writes; a batch refused by the limits' count answers `rate_limited`, any other failure is thrown on. */
export async function withinFormLimits<T>(write: () => Promise<Result<T>>): Promise<Result<T>> {
  try {
    return await write();
  } catch (error) {
    const limit = formLimitRefusal(error);
    if (limit === null) throw error;
    return limit === "ip" ? tooManyFromIp() : tooManyForAddress();
  }
}
