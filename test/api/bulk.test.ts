import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { apiFor, createPanel, receiver } from "../helpers";

async function waitForJob(api: ReturnType<typeof apiFor>, jobid: string): Promise<any> {
  for (let i = 0; i < 400; i++) {
    const status = await api("contact", "bulkstatus", { data: jobid });
    if (status.body.job && (status.body.job.status === "completed" || status.body.job.status === "failed") && status.body.job.callback?.state !== "sending") {
      return status.body.job;
    }
    await scheduler.wait(50);
  }
  throw new Error(`job ${jobid} did not finish`);
}

describe("smoke", () => {
  it("imports a small file", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const url = await receiver.putFile(`smoke-${crypto.randomUUID()}.csv`, "NAME,EMAIL,AGE\nAda,ada@example.com,36\nBo,bo@example.com,x\n");
    const started = await api("contact", "bulkupload", { path: url });
    expect(started.status).toBe(200);
    const job = await waitForJob(api, started.body.jobid);
    console.log(JSON.stringify(job, null, 1));
    expect(job.status).toBe("completed");
  });
});
