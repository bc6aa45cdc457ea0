import { describe, expect, it } from "vitest";
import { contactOperations } from "../../src/api/contacts";
import type { z } from "../../src/lib/z";

// The envelope's contact add reads its common parameters without zod (src/api/contacts.ts,
// fastAddParams). Here both readings run on many inputs, well-formed ones and near misses:
// where the fast path answers, its output is the schema's; where it does not, the schema reads
// the call, so every refusal stays the schema's.

const add = contactOperations.add!;
const schema = add.params as z.ZodType;

/** `data` as callers send it (JSON text in a query or form body, or a JSON body's object), and near misses. */
const DATA: unknown[] = [
  '{"EMAIL":"ada@example.com","NAME":"Ada"}',
  ' {"EMAIL":"ada@example.com"} ',
  '{"EMAIL":"ada@example.com","AGE":36,"TAGS":["a","b"],"ADDRESS":{"CITY":"Pune"},"NOTE":null}',
  '{"a":{"b":{"c":{"d":{"e":{"f":{"g":1}}}}}}}',
  `{"deep":${"[".repeat(40)}${"]".repeat(40)}}`,
  '{"__proto__":{"polluted":1},"EMAIL":"a@example.com"}',
  '{"\\u005f_proto__":1}',
  '{"EMAIL":"\\u0061da@example.com"}',
  '{"EMAIL":"a@example.com","EMAIL":"b@example.com"}',
  "{}",
  " {} ",
  "[]",
  '[{"EMAIL":"a@example.com"}]',
  "null",
  '"text"',
  "12",
  "true",
  "",
  "   ",
  "{",
  '{"EMAIL": }',
  "ada@example.com",
  { EMAIL: "ada@example.com" },
  {},
  [],
  null,
  undefined,
  12,
  true,
];

/** `listid` as callers send it, absent first. */
const LISTIDS: unknown[] = [undefined, "", "  ", "4", "4,7", "[4,7]", 4, [4, "7"], "x", null];

describe("contact add's parameters read without zod", () => {
  it("answer as the schema does wherever the fast path answers, and leave every other call to it", () => {
    let fastOnes = 0;
    for (const data of DATA) {
      for (const listid of LISTIDS) {
        for (const extra of [{}, { type: "contact", activity: "add", apikey: "k", unknown: "x" }]) {
          const params: Record<string, unknown> = { ...extra };
          if (data !== undefined) params.data = data;
          if (listid !== undefined) params.listid = listid;
          const expected = schema.safeParse(params);
          const got = add.fastParams!(params);
          if (got === undefined) continue;
          fastOnes++;
          expect(expected.success, JSON.stringify(params)).toBe(true);
          expect(got).toStrictEqual(expected.data);
          expect(JSON.stringify(got)).toBe(JSON.stringify(expected.data));
        }
      }
    }
    // The common calls do take it: each of the six JSON texts of an object with members that
    // the schema accepts, without listid, with and without other parameters.
    expect(fastOnes).toBe(6 * 2);
  });
});
