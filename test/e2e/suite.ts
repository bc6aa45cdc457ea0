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

/**
 * Starts the service before this file's tests and stops it after them. `options` may first
 * start the file's own stand-ins; `setUp` runs once the service is up. The file's own top-level
 * `before` hooks would not wait for the service (node:test runs those together), so what needs
 * it goes in `setUp`.
 */
export function serviceForThisFile(
  { options = () => ({}), setUp = async () => {} }: { options?: () => StartOptions | Promise<StartOptions>; setUp?: () => Promise<void> } = {},
): void {
  before(async () => {
    service = await startService(await options());
    adminCall = adminCaller(service);
    await setUp();
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
