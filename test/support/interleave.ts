import { env } from "cloudflare:workers";

// A step of the background work interleaved with what a client does: a binding whose chosen
// method runs the client's act first, the test's way to land a call in the middle of a step.

/** `target` with some members replaced; every other method still runs on the target itself. */
export function overriding<T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(base, key) {
      if (Object.prototype.hasOwnProperty.call(overrides, key)) return overrides[key as keyof T];
      const value = Reflect.get(base, key);
      return typeof value === "function" ? value.bind(base) : value;
    },
  });
}

/**
 * `FILES` whose first outbox write (of `panelId`'s mail, when given) runs `during` before it
 * lands: a client acting while a message is with the provider.
 */
export function filesActingOnSend(during: () => Promise<void>, panelId?: string): R2Bucket {
  let done = false;
  const files = env.FILES;
  return overriding(files, {
    put: async (name: string, ...rest: unknown[]) => {
      if (!done && name.startsWith(panelId ? `outbox/${panelId}/` : "outbox/")) {
        done = true;
        await during();
      }
      return (files.put as (...a: unknown[]) => unknown).call(files, name, ...rest);
    },
  });
}
