// The Worker modules the panel takes its request types from are type-checked here too, and
// some name the Worker's Env in signatures the panel never calls; this is the part they use.
interface Env {
  ALLOW_PRIVATE_FETCH: string;
  LOCAL_MAILBOX: string;
}
