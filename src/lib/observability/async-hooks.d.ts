// workerd's node:async_hooks (nodejs_compat); only what context.ts uses, without all of @types/node
// in the Worker's types (its globals would shadow the runtime's).
declare module "node:async_hooks" {
  export class AsyncLocalStorage<T> {
    run<R>(store: T, callback: () => R): R;
    getStore(): T | undefined;
  }
}
