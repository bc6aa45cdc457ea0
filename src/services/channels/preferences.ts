import { contactReach, LIFTABLE_SUPPRESSIONS, type ChannelPreferences, type ChannelState, type PreferenceActor, type PreferencesChange, type SuppressionReason } from "../../domain/preferences";
import type { FieldProblem } from "../../domain/problems";
import { refused, succeeded, type Result } from "../../lib/problems";
import { changedValues } from "../../domain/audit";
import { recordAudit, type Auditor } from "../audit/record";
import type { Contact } from "../../store/contacts";
import { pushOptedOut, setPushOptOutStatement } from "../../store/preferences";
import type { ShardDb } from "../../store/shards";
import { phoneSuppression } from "../../store/sms";
import { liftSmsStopStatement, suppressSmsElsewhere, suppressSmsStatement } from "./sms/suppressions";
import { liftSuppressionStatement, suppressAddressStatement, suppressionHereOrHome } from "../../store/suppressions";
import type { PanelShards } from "../access/partitions";
import { liftOnOtherShards, type StopLift } from "./stop-lifts";
import { copyHomeStops, type AddressStop } from "./email/home-stop-copies";

const EMAIL_STATES: Record<SuppressionReason, ChannelState> = { unsubscribe: "unsubscribed", complaint: "complained", hard_bounce: "bounced" };

/**
 * The contact's channels, read on `db`, its shard. Its address's stop is the stricter of that
 * shard's and the panel's `home`'s (decision 0038: a stop by address written elsewhere may be on
 * the home alone, and its sends read it too; suppressionHereOrHome). SMS stops are written on
 * every shard, push opt-outs with the contact.
 */
export async function contactPreferences(db: ShardDb, home: ShardDb, panelId: string, contact: Pick<Contact, "id" | "attributes">): Promise<ChannelPreferences> {
  const { address, phone } = contactReach(contact.attributes);
  const [email, sms, push] = await Promise.all([
    address ? suppressionHereOrHome(db, home, panelId, address) : undefined,
    phone ? phoneSuppression(db, panelId, phone) : undefined,
    pushOptedOut(db, panelId, contact.id),
  ]);
  const emailState: ChannelState = email === undefined ? "unreachable" : email === null ? "subscribed" : EMAIL_STATES[email];
  const smsState: ChannelState = sms === undefined ? "unreachable" : sms === null ? "subscribed" : sms === "stop" ? "unsubscribed" : "stopped";
  return { email: emailState, sms: smsState, push: push ? "unsubscribed" : "subscribed" };
}

/**
 * Applies a contact's choices, made by the recipient themself (their message's pages) or by an
 * operator. A channel it cannot be reached on is refused as invalid; one the service holds (a
 * hard bounce, a number stopped by the provider or an operator) or, for an operator, one the
 * recipient complained about, is refused as a conflict. Nothing is changed when any is refused.
 * `db` is the contact's shard, where its channels are read (its address's stop beside the
 * home's, `shards[0]`: contactPreferences) and changed; a lift, and a number's stop, also
 * reach the panel's other `shards`, the home's stop included (panelShards: just `db` on a panel
 * without a map; stop-lifts.ts, sms/suppressions.ts).
 */
export async function changeContactPreferences(
  db: ShardDb,
  shards: PanelShards,
  panelId: string,
  contact: Pick<Contact, "id" | "attributes">,
  change: PreferencesChange,
  now: number,
  by: PreferenceActor,
  /**
   * An operator's change, recorded in the audit log with each channel's before and after: `log`
   * is the panel's home, whose log the panel reads (`db` may be another shard, decision 0038).
   */
  audit?: { by: Auditor; log: ShardDb },
  /** The consent records of the channels changed, written in the batch that changes them. */
  proof?: (changed: PreferencesChange) => Promise<D1PreparedStatement[]>,
): Promise<Result<ChannelPreferences>> {
  const current = await contactPreferences(db, shards[0], panelId, contact);
  const unreachable: FieldProblem[] = [];
  const held: FieldProblem[] = [];
  for (const channel of ["email", "sms"] as const) {
    const wanted = change[channel];
    if (wanted === undefined || wanted === current[channel]) continue;
    if (current[channel] === "unreachable") unreachable.push({ field: channel, message: channel === "email" ? "the contact has no EMAIL" : "the contact has no valid MOBILE" });
    if (current[channel] === "bounced") held.push({ field: channel, message: "the address hard-bounced; mail to it stays stopped" });
    if (current[channel] === "stopped") held.push({ field: channel, message: "the number was stopped by the provider or an operator; lift that on the SMS screen" });
    if (current[channel] === "complained" && wanted === "subscribed" && by === "operator") {
      held.push({ field: channel, message: "the recipient marked mail as spam (a complaint); only they can subscribe again, from a message's unsubscribe or preference page" });
    }
  }
  // A held channel is the stronger answer: fixing the input would not help.
  if (held.length) return refused("conflict", [...held, ...unreachable]);
  if (unreachable.length) return refused("invalid", unreachable);
  const { address, phone } = contactReach(contact.attributes);
  const changed: PreferencesChange = {};
  const writes: D1PreparedStatement[] = [];
  // Each lift is written on the contact's shard in the batch, and made on the panel's other shards before it.
  const lifts: StopLift[] = [];
  // A stop written on the home is copied to the panel's other shards before the batch (home-stop-copies.ts).
  const stops: AddressStop[] = [];
  // A number's stop is written on every shard, as a STOP reply's (sms/suppressions.ts): the others before the batch, as copyHomeStops.
  const phoneStops: string[] = [];
  const lift = (on: StopLift) => {
    lifts.push(on);
    const here = on(db);
    if (here) writes.push(here);
  };
  if (change.email !== undefined && change.email !== current.email && address) {
    changed.email = change.email;
    // On a complained address an unsubscribe changes nothing: the stricter complaint stays (store/suppressions.ts).
    if (change.email === "unsubscribed") {
      writes.push(suppressAddressStatement(db, panelId, address, "unsubscribe", null, now));
      stops.push({ panelId, address, reason: "unsubscribe", campaignId: null });
    }
    else lift((shard) => liftSuppressionStatement(shard, panelId, address, LIFTABLE_SUPPRESSIONS[by]));
  }
  if (change.sms !== undefined && change.sms !== current.sms && phone) {
    changed.sms = change.sms;
    if (change.sms === "unsubscribed") {
      writes.push(suppressSmsStatement(db, panelId, phone, "stop", now));
      phoneStops.push(phone);
    }
    // Only a contact's own STOP gets here (a stop by the provider or an operator was refused above, and stays where another shard holds one); gone already is as good.
    else lift((shard) => liftSmsStopStatement(shard, panelId, phone));
  }
  if (change.push !== undefined && change.push !== current.push) {
    changed.push = change.push;
    writes.push(setPushOptOutStatement(db, panelId, contact.id, change.push === "unsubscribed", now));
  }
  // Why the other shards' lifts come first: stop-lifts.ts.
  if (lifts.length) await liftOnOtherShards(shards, db, lifts);
  await copyHomeStops(shards, db, stops, now);
  await suppressSmsElsewhere(shards, db, panelId, phoneStops, "stop", now);
  // The changes and their consent records (`proof`, a recipient's) in one batch: never a change without its proof.
  if (writes.length) await db.batch([...writes, ...((await proof?.(changed)) ?? [])]);
  const after = await contactPreferences(db, shards[0], panelId, contact);
  if (audit) {
    const changed = changedValues(current, after);
    if (Object.keys(changed).length) await recordAudit(audit.log, panelId, audit.by, "contact.preferences_changed", String(contact.id), { changed });
  }
  return succeeded(after);
}
