import type { EventChannel, NewEvent } from "../../domain/events";
import { WAITABLE_EVENTS, type MessageChannel } from "../../domain/journey";
import { resolveEventTime } from "../../domain/time";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { getMessages } from "../../store/journeys/messages";
import type { Panel } from "../../store/panels";
import { panelShards } from "../access/partitions";
import { shardOf } from "../../store/shards";
import { recordEvents } from "../pipeline/record";

/** What an SMS gateway or push service reports of a journey message (CONTRACT 7), as the handler parsed it. */
export interface ChannelReport {
  msgid: string;
  event: string;
  /** YYMMDDhhmmss or ISO 8601, in the panel's time zone; absent: now. */
  ts?: string | number;
  /** The report's own id; a second report with it is a duplicate. */
  guid?: string;
  /** Everything else the report carried (ip_addr, user_agent, url...): the event's parameters. */
  details: Record<string, unknown>;
}

/**
 * The journey message `msgid` names: on the home, or for a panel with a partition map on the
 * shard of its contact's partition (decision 0038), so each shard of the panel is asked (one
 * read each; just the home's for a panel without a map).
 */
async function findMessage(env: Env, panel: Panel, msgid: string) {
  const found = await Promise.all(panelShards(env, panel, shardOf(env, panel)).map(async (db) => (await getMessages(db, panel.id, [msgid])).get(msgid)));
  return found.find((message) => message !== undefined);
}

/**
 * A reported `delivered` or `click` (email: open, click, bounce) of a journey message, by its
 * msgid: recorded as the message's event in the one pipeline, where it ends the waits for it.
 * Refused when the channel does not report that event, the panel has no such message on that
 * channel, or `ts` cannot be read.
 */
export async function reportChannelEvent(
  env: Env,
  panel: Panel,
  channel: MessageChannel,
  report: ChannelReport,
  options: { now: number; defer: (work: Promise<unknown>) => void },
): Promise<Result<{ guid: string; duplicate: boolean }>> {
  // Push services say "view" for what the journey waits on as delivered.
  const name = (channel === "apn" || channel === "bpn") && report.event === "view" ? "delivered" : report.event;
  if (!WAITABLE_EVENTS[channel].includes(name)) return refusedField("invalid", "event", `must be one of ${WAITABLE_EVENTS[channel].join(", ")} for ${channel}`);
  const message = await findMessage(env, panel, report.msgid);
  if (!message || message.channel !== channel) return refused("not_found", [{ field: "msgid", message: "unknown message" }], `msgid: no ${channel} message "${report.msgid}" in this panel`);
  const occurredAt = resolveEventTime(report.ts, ["cts", "iso", "epoch"], panel.timezone, options.now);
  if (!occurredAt.ok) return refusedField("invalid", "ts", occurredAt.reason);
  const event: NewEvent = {
    channel: channel as EventChannel,
    name,
    occurredAt: occurredAt.value,
    contactId: message.contactId,
    msgid: message.msgid,
    journeyId: message.journeyId,
    source: "channel",
    params: report.details,
    // A delivery is reported once per message; clicks may repeat.
    guid: report.guid ?? (name === "delivered" ? `${channel}:${message.msgid}:delivered` : undefined),
  };
  const recorded = await recordEvents(env, panel, [event], options);
  return succeeded({ guid: recorded.guids[0]!, duplicate: recorded.duplicates === 1 });
}
