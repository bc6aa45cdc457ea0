// The Settings screen's frequency caps and quiet hours in Chromium, against the service started
// as `npm start` starts it: an owner sets an SMS cap and quiet hours, a window that ends where it
// starts is refused under the input it names, and the rules the API keeps are what was typed.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

describe("frequency caps and quiet hours in Settings", () => {
  test("an owner caps SMS at 1 a day with quiet hours 21:00-09:00; a window ending where it starts is refused by name", async () => {
    const panelId = service.printed["demo panel"]!;
    const { page } = keep(await signInAsOwner(service));
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Settings", exact: true }).click();
    const form = page.getByRole("form", { name: "Message rules" });
    await form.getByLabel("SMS: at most this many messages").fill("1");
    await form.getByLabel("SMS: per this many days").fill("1");
    await form.getByLabel("SMS: quiet from").fill("21:00");
    await form.getByLabel("SMS: quiet until").fill("21:00");
    await form.getByRole("button", { name: "Save message rules" }).click();
    const until = form.getByLabel("SMS: quiet until");
    await until.and(page.locator("[aria-invalid=true]")).waitFor();
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}`)).message_rules, { caps: [], quiet_hours: [] }, "a refused change stores nothing");
    await checkAccessibility(page, "message-rules-refused");

    await until.fill("09:00");
    await form.getByRole("button", { name: "Save message rules" }).click();
    await page.getByRole("status").filter({ hasText: "Message rules saved." }).waitFor();
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}`)).message_rules, {
      caps: [{ channel: "sms", max: 1, days: 1 }],
      quiet_hours: [{ channel: "sms", from: "21:00", to: "09:00" }],
    });
    await checkAccessibility(page, "message-rules-saved");
    await screenshot(page, "message-rules-saved");
  });
});
