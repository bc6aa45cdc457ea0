// What every end-to-end file sets up alike: the service started before its tests, as `npm start`
// starts it, and stopped after them; a caller of its admin API; and the browser windows its
// tests open, closed at the end. `node --test` runs each file in a process of its own, so these
// bindings are that file's.
import { after, before } from "node:test";
import type { BrowserWindow } from "./browser.ts";
import { adminCaller, startService, type Service, type StartOptions } from "./service.ts";

export let service: Service & { stateDir: string; port: number };
export let adminCall: ReturnType<typeof adminCaller>;
const windows: BrowserWindow[] = [];

/** Starts the service before this file's tests (with `options`, which may wait on the file's own stand-ins) and stops it after them. */
export function serviceForThisFile(options: () => StartOptions | Promise<StartOptions> = () => ({})): void {
  before(async () => {
    service = await startService(await options());
    adminCall = adminCaller(service);
  });
  after(async () => {
    for (const window of windows) await window.close();
    await service?.stop();
  });
}

/** The window, closed with the file's service. */
export function keep(window: BrowserWindow): BrowserWindow {
  windows.push(window);
  return window;
}
