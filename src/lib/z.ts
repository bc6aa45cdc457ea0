import { z } from "zod";

// Workers forbid runtime code generation, which zod's JIT object parser uses.
// Every module imports zod from here so the setting is in force before any schema runs.
z.config({ jitless: true });

export { z };
