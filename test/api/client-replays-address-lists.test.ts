import { describe, expect, it } from "vitest";
import { apiFor, call, createPanel } from "../support/helpers";
import { broadcastData, host, notificationsOf, publish } from "../support/broadcasts";

// Client replays, round five: several addresses as JSON and form clients write a list. A JSON
// client holds the recipients as an array (`"notify_me": ["ops@…", "crm@…"]`), and Python's
// requests writes a list in a form as the name repeated (`notifyemail=a&notifyemail=b`).

describe("address lists given as lists", () => {
  it("4.10 with notify_me as a JSON array (requests' json=, a JSON.stringify of the settings): each address gets the answer", async () => {
    const panel = await createPanel();
    const response = await publish(panel, await broadcastData({ notify_me: ["ops@example.com", "boss@example.com"] }), "json");
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true });
    const [mail] = await notificationsOf(panel);
    expect(mail.to).toEqual(["ops@example.com", "boss@example.com"]);
    // An array of something else is still refused, naming the member and what it must be.
    const refused = await publish(panel, await broadcastData({ notify_me: ["ops@example.com", "not an address"] }), "json");
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ success: false, CampaignID: "" });
    expect(refused.body.message).toContain("data.notify_me");
  });

  it("bulkupload with notifyemail as a JSON array, and as the name repeated in a form (requests' data={'notifyemail': [a, b]})", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const path = await host("contacts.csv", "EMAIL,NAME\nada@example.com,Ada\n");
    const asJson = await api("contact", "bulkupload", { path, notifyemail: ["ops@example.com", "crm@example.com"] }, "json");
    expect(asJson.status).toBe(200);
    const jsonJob = await api("contact", "bulkstatus", { data: asJson.body.jobid });
    expect(jsonJob.body.job.notifyemail).toEqual(["ops@example.com", "crm@example.com"]);

    const asForm = await call(`/apiv2?type=contact&activity=bulkupload&apikey=${encodeURIComponent(panel.apiKey)}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `path=${encodeURIComponent(path)}&notifyemail=ops%40example.com&notifyemail=crm%40example.com`,
    });
    const formAnswer = (await asForm.json()) as any;
    expect(asForm.status).toBe(200);
    const formJob = await api("contact", "bulkstatus", { data: formAnswer.jobid });
    expect(formJob.body.job.notifyemail).toEqual(["ops@example.com", "crm@example.com"]);

    const refused = await api("contact", "bulkupload", { path, notifyemail: ["ops@example.com", 7] }, "json");
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ result: "Failed", errors: [{ field: "notifyemail.1" }] });
  });
});
