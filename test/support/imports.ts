import { expect } from "vitest";
import { getImportJob } from "../../src/store/imports";
import { apiFor, receiver, type TestPanel, panelData } from "./helpers";

/** Puts a file on the loopback receiver; returns the URL a bulk upload's `path` names. */
export async function hostFile(body: string | Uint8Array, contentType = "text/csv"): Promise<string> {
  return receiver.putFile(`import-${crypto.randomUUID()}.csv`, body, contentType);
}

/** Waits until the job has finished everything, notifications included (the queue delivers for real); returns bulkstatus's job. */
export async function importFinished(panel: TestPanel, jobid: string): Promise<any> {
  for (let i = 0; i < 600; i++) {
    const job = await getImportJob(panelData, panel.id, jobid);
    if (job?.phase === "done") return (await apiFor(panel)("contact", "bulkstatus", { data: jobid })).body.job;
    await scheduler.wait(50);
  }
  throw new Error(`job ${jobid} did not finish`);
}

/** contact/bulkupload of `csv` through the API, to its end. */
export async function importCsv(panel: TestPanel, csv: string, params: Record<string, unknown> = {}): Promise<any> {
  const started = await apiFor(panel)("contact", "bulkupload", { path: await hostFile(csv), ...params });
  expect(started.status).toBe(200);
  expect(started.body.result).toBe("Success");
  expect(started.body.jobid).toMatch(/^job_/);
  return importFinished(panel, started.body.jobid);
}
