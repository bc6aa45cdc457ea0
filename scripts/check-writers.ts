// `npm run check:boundaries` (part of `npm test`): one writer per table. Rows of `contacts` are
// inserted and updated by src/store/contacts.ts alone (the API, imports and the pipeline all
// go through it), rows of `lists` are inserted by src/store/lists.ts alone, and rows of
// `sms_suppressions` are written by src/store/sms.ts (its store module) and, for one stated
// reason, by the erasure. A statement written anywhere else fails here, naming the file and the
// line. Statements are matched across line breaks.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "..");

/** Each write, and the files allowed to hold it: the table's writer first. */
const WRITERS: ReadonlyArray<{ statement: RegExp; writers: readonly string[] }> = [
  { statement: /\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+contacts\b/gi, writers: ["src/store/contacts.ts"] },
  { statement: /\bUPDATE\s+(?:OR\s+\w+\s+)?contacts\b/gi, writers: ["src/store/contacts.ts"] },
  { statement: /\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+lists\b/gi, writers: ["src/store/lists.ts"] },
  {
    statement: /\b(?:(?:INSERT|REPLACE)\s+(?:OR\s+\w+\s+)?INTO|UPDATE\s+(?:OR\s+\w+\s+)?|DELETE\s+FROM)\s+sms_suppressions\b/gi,
    writers: [
      "src/store/sms.ts",
      // Erasing a contact re-keys its number's suppression under the number's hash, in the batch
      // that deletes the contact, so a stopped number stays stopped without the number being
      // kept (CONTRACT: erasure). Stopping and lifting go through store/sms.ts.
      "src/store/erasure.ts",
    ],
  },
];

function files(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : /\.tsx?$/.test(entry.name) ? [join(dir, entry.name)] : [],
  );
}

const problems: string[] = [];
for (const file of files("src")) {
  const path = relative(root, join(root, file)).replaceAll("\\", "/");
  const text = readFileSync(join(root, file), "utf8");
  for (const { statement, writers } of WRITERS) {
    if (writers.includes(path)) continue;
    for (const found of text.matchAll(statement)) {
      const line = text.slice(0, found.index).split("\n").length;
      problems.push(`${path}:${line}: "${found[0].replace(/\s+/g, " ")}" belongs in ${writers[0]}, the table's one writer`);
    }
  }
}
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`check-writers: contacts, lists and sms_suppressions are written by their own modules only`);
