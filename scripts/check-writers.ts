// `npm run check:boundaries` (part of `npm test`): one writer per table. Rows of `contacts` are
// inserted and updated by src/store/contacts.ts alone (the API, imports and the pipeline all
// go through it), rows of `lists` are inserted by src/store/lists.ts alone. A statement
// written anywhere else fails here, naming the file and the line.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "..");

/** Each write, and the one file allowed to hold it. */
const WRITERS: ReadonlyArray<{ statement: RegExp; writer: string }> = [
  { statement: /\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+contacts\b/i, writer: "src/store/contacts.ts" },
  { statement: /\bUPDATE\s+(?:OR\s+\w+\s+)?contacts\b/i, writer: "src/store/contacts.ts" },
  { statement: /\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+lists\b/i, writer: "src/store/lists.ts" },
];

function files(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : /\.tsx?$/.test(entry.name) ? [join(dir, entry.name)] : [],
  );
}

const problems: string[] = [];
for (const file of files("src")) {
  const path = relative(root, join(root, file)).replaceAll("\\", "/");
  const lines = readFileSync(join(root, file), "utf8").split("\n");
  for (const { statement, writer } of WRITERS) {
    if (path === writer) continue;
    lines.forEach((line, i) => {
      const found = statement.exec(line);
      if (found) problems.push(`${path}:${i + 1}: "${found[0]}" belongs in ${writer}, the table's one writer`);
    });
  }
}
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`check-writers: contacts and lists are written by their one module each`);
