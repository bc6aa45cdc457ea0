import type { TestProject } from "vitest/node";
import { startReceiver } from "./receiver.ts";

declare module "vitest" {
  export interface ProvidedContext {
    receiverUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const { server, url } = await startReceiver();
  project.provide("receiverUrl", url);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
