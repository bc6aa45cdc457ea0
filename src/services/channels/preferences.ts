import { contactReach, type ChannelPreferences, type ChannelState, type PreferencesChange } from "../../domain/preferences";
import type { FieldProblem } from "../../domain/problems";
import type { Contact } from "../../store/contacts";
import { pushOptedOut, setPushOptOut } from "../../store/preferences";
import type { ShardDb } from "../../store/shards";
import { phoneSuppression } from "../../store/sms";
import { liftSmsSuppression, suppressSms } from "./sms/suppressions";
import { liftUnsubscribe, suppressAddress, suppressionOf } from "../../store/suppressions";

export async function contactPreferences(db: ShardDb, panelId: string, contact: Pick<Contact, "id" | "attributes">): Promise<ChannelPreferences> {
  const { address, phone } = contactReach(contact.attributes);
  const [email, sms, push] = await Promise.all([
    address ? suppressionOf(db, panelId, address) : undefined,
    phone ? phoneSuppression(db, panelId, phone) : undefined,
    pushOptedOut(db, panelId, contact.id),
  ]);
  const emailState: ChannelState = email === undefined ? "unreachable" : email === null ? "subscribed" : email === "unsubscribe" ? "unsubscribed" : "bounced";
  const smsState: ChannelState = sms === undefined ? "unreachable" : sms === null ? "subscribed" : sms === "stop" ? "unsubscribed" : "stopped";
  return { email: emailState, sms: smsState, push: push ? "unsubscribed" : "subscribed" };
}

/**
 * Applies a contact's choices. A channel it cannot be reached on, or one the service stopped (a
 * hard bounce, a number stopped by the provider or an operator), is refused with its reason and
 * nothing is changed.
 */
export async function changeContactPreferences(
  db: ShardDb,
  panelId: string,
  contact: Pick<Contact, "id" | "attributes">,
  change: PreferencesChange,
  now: number,
): Promise<{ ok: true; preferences: ChannelPreferences } | { ok: false; problems: FieldProblem[] }> {
  const current = await contactPreferences(db, panelId, contact);
  const problems: FieldProblem[] = [];
  for (const channel of ["email", "sms"] as const) {
    const wanted = change[channel];
    if (wanted === undefined || wanted === current[channel]) continue;
    if (current[channel] === "unreachable") problems.push({ field: channel, message: channel === "email" ? "the contact has no EMAIL" : "the contact has no valid MOBILE" });
    if (current[channel] === "bounced") problems.push({ field: channel, message: "the address hard-bounced; mail to it stays stopped" });
    if (current[channel] === "stopped") problems.push({ field: channel, message: "the number was stopped by the provider or an operator; lift that on the SMS screen" });
  }
  if (problems.length) return { ok: false, problems };
  const { address, phone } = contactReach(contact.attributes);
  if (change.email !== undefined && change.email !== current.email && address) {
    if (change.email === "unsubscribed") await suppressAddress(db, panelId, address, "unsubscribe", null, now);
    else await liftUnsubscribe(db, panelId, address);
  }
  if (change.sms !== undefined && change.sms !== current.sms && phone) {
    if (change.sms === "unsubscribed") await suppressSms(db, panelId, phone, "stop", now);
    // Only a contact's own STOP gets here (a stop by the provider or an operator was refused above); gone already is as good.
    else await liftSmsSuppression(db, panelId, phone);
  }
  if (change.push !== undefined && change.push !== current.push) await setPushOptOut(db, panelId, contact.id, change.push === "unsubscribed", now);
  return { ok: true, preferences: await contactPreferences(db, panelId, contact) };
}
