import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { parseMessage } from "./mime";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../../src/index";
import { formatLocalIso } from "../../src/domain/time";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { admin, apiFor, jobFinished, panelData, receiver, type TestPanel } from "./helpers";
import { collectingQueue, drainCron, withBindings } from "./cron";

export function toBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** `YYYY-MM-DD HH:mm:SS` in `timeZone`, `minutes` from now (rounded to the second). */
export function scheduleIn(minutes: number, timeZone = "UTC"): string {
  return formatLocalIso(Date.now() + minutes * 60_000, timeZone).replace("T", " ");
}

let fileCount = 0;

/** Hosts a file on the loopback receiver under a unique directory, keeping `name` as the last path segment. */
export function host(name: string, body: BodyInit, contentType = "text/csv"): Promise<string> {
  return receiver.putFile(`${++fileCount}-${crypto.randomUUID()}/${name}`, body, contentType);
}

export const HTML = `<html><body><p>Hello {{NAME|there}}, from {{ CITY | your city }}.</p><a href="https://shop.example.com/sale?x=1&amp;y=2">Sale</a></body></html>`;

/** A valid 4.10 data object; `overrides` replace members (undefined removes one). */
export async function broadcastData(overrides: Record<string, unknown> = {}, csv = "EMAIL,NAME,CITY\nada@example.com,Ada,Pune\nbob@example.com,Bob,\n") {
  const data: Record<string, unknown> = {
    contacts_upload_source: await host("contacts.csv", csv),
    list_name: `List ${crypto.randomUUID()}`,
    campaign_name: "Spring sale",
    subject_line: "Hello {{NAME|friend}}",
    sender_name: "Shop",
    sender_email_id: "shop@example.com",
    tags: "spring,sale",
    // Far ahead, so that publish runs of other tests do not pick these campaigns up.
    schedule_date: scheduleIn(60 * 24 * 30),
    source_code: toBase64(HTML),
    notify_me: "ops@example.com",
  };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete data[key];
    else data[key] = value;
  }
  return data;
}

export function publish(panel: TestPanel, data: Record<string, unknown>, style: Parameters<ReturnType<typeof apiFor>>[3] = "mixed") {
  return apiFor(panel)("email_broadcast", "upload_contact_and_publish", { data }, style);
}

/** Waits for the campaign's contact import (a background job) to finish; returns the job. */
export async function waitForImport(panel: TestPanel, campaignId: string): Promise<any> {
  return jobFinished(panel, (await campaign(panel, campaignId)).import_job_id);
}

export async function campaign(panel: TestPanel, id: string) {
  return (await admin("GET", `/panels/${panel.id}/campaigns/${id}`)).body;
}

/** Waits until the campaign leaves `sending` (the sends queue works in the background). */
export async function waitForCampaign(panel: TestPanel, id: string, done = (c: any) => c.status === "sent" || c.status === "failed"): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const current = await campaign(panel, id);
    if (done(current)) return current;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`campaign ${id} did not finish: ${JSON.stringify(await campaign(panel, id))}`);
}

export async function outbox(panel: TestPanel, limit = 100): Promise<any[]> {
  return (await admin("GET", `/panels/${panel.id}/outbox?channel=email&limit=${limit}`)).body.messages;
}

export async function rawMessage(panel: TestPanel, id: string): Promise<string> {
  return (await admin("GET", `/panels/${panel.id}/outbox/${encodeURIComponent(id)}`)).body.raw;
}

/** The HTML part of a raw message. */
export function htmlOf(raw: string): string {
  return parseMessage(raw).html;
}

export async function notificationsOf(panel: TestPanel): Promise<any[]> {
  return (await admin("GET", `/panels/${panel.id}/notifications?kind=broadcast_notify`)).body.notifications;
}

/** Fires the Worker's own scheduled handler at `time`, as the Cron Trigger does, and runs the work it hands to the CRON queue. */
export async function fireCron(time: number): Promise<void> {
  const controller = createScheduledController({ scheduledTime: new Date(time), cron: "* * * * *" });
  const exec = createExecutionContext();
  const queue = collectingQueue();
  const tickEnv = withBindings(env, { CRON: queue });
  await worker.scheduled(controller, tickEnv, exec);
  await waitOnExecutionContext(exec);
  await drainCron(tickEnv, queue);
}

/** Creates a campaign (4.10, contacts from `csv`) scheduled `minutes` ahead and returns its id and send instant. */
export async function scheduled(panel: TestPanel, csv: string, overrides: Record<string, unknown> = {}, minutes = 120): Promise<{ id: string; sendAt: number }> {
  const response = await publish(panel, await broadcastData({ schedule_date: scheduleIn(minutes), ...overrides }, csv));
  expect(response.body.success).toBe(true);
  await waitForImport(panel, response.body.CampaignID);
  const stored = await getCampaign(panelData, panel.id, response.body.CampaignID);
  return { id: response.body.CampaignID, sendAt: stored!.sendAt };
}

export { env };
