import { canonicalAttributeName } from "../../domain/attributes";
import { bomLength, cutRecords, parseRecords } from "../../domain/csv";
import { EMAIL_ATTRIBUTE } from "../../domain/email";

const MOBILE_ATTRIBUTE = "MOBILE";

/**
 * Erasure's step for broadcasts' uploaded contact files (`broadcasts/{panel}/{campaign}/contacts/*`):
 * each is rewritten with the records naming the contact blanked, every other byte kept as uploaded.
 * Rewritten, not deleted: a campaign's import may still be waiting for or retrying its file, and the
 * other contacts in it are still that campaign's recipients. Blanked, not cut out: a record becomes
 * as many empty lines as it had bytes, so the byte offsets an import under way resumes from still
 * point where they did, and the import skips empty lines.
 */

const CONTACT_FILE = /^broadcasts\/[^/]+\/[^/]+\/contacts\/[^/]+$/;
const decoder = new TextDecoder();
const LF = 0x0a;

/** The erased contact as the files may name it: its key and its attributes (EMAIL, MOBILE, the key's own column). */
export interface ContactInFiles {
  key: string;
  attributes: Readonly<Record<string, unknown>>;
}

const normalised = (value: string) => value.trim().toLowerCase();
const digits = (value: string) => value.replace(/\D/g, "");

/**
 * Whether a cell under `column` names the contact. Only identifying columns count, so another
 * contact's row sharing, say, a city is kept: EMAIL, MOBILE (compared by digits, as files write
 * numbers in many ways), and any column where the contact's own value is its key.
 */
function namesContact(contact: ContactInFiles, column: string, cell: string): boolean {
  const own = contact.attributes[column];
  if (typeof own !== "string" && typeof own !== "number") return false;
  const value = String(own);
  if (column === MOBILE_ATTRIBUTE) return digits(value) !== "" && digits(cell) === digits(value);
  const identifying = column === EMAIL_ATTRIBUTE || normalised(value) === normalised(contact.key);
  return identifying && normalised(value) !== "" && normalised(cell) === normalised(value);
}

function fieldsOf(record: Uint8Array): string[] {
  let fields: string[] = [];
  parseRecords(decoder.decode(record), (parsed) => (fields = parsed.fields));
  return fields;
}

/** The file with the records naming the contact blanked (same length), every other byte as it was; null when none names it. */
export function withContactRecordsBlanked(bytes: Uint8Array, contact: ContactInFiles): Uint8Array | null {
  const out = bytes.slice();
  let columns: string[] | undefined;
  let blanked = 0;
  for (let start = bomLength(bytes); start < bytes.length; ) {
    const { end } = cutRecords(bytes, start, 1, Infinity, true);
    if (end <= start) break;
    const record = bytes.subarray(start, end);
    const fields = fieldsOf(record);
    if (!columns) {
      // The first non-blank record is the header, as the import reads it.
      if (fields.some((field) => field.trim() !== "")) columns = fields.map(canonicalAttributeName);
    } else if (fields.some((field, i) => namesContact(contact, columns![i] ?? "", field))) {
      out.fill(LF, start, end);
      blanked++;
    }
    start = end;
  }
  return blanked === 0 ? null : out;
}

/** Rewrites every broadcast contact file of the panel that names the contact; answers how many were rewritten. */
export async function eraseFromBroadcastFiles(bucket: R2Bucket, panelId: string, contact: ContactInFiles): Promise<number> {
  let rewritten = 0;
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix: `broadcasts/${panelId}/`, cursor });
    for (const listed of page.objects) {
      if (!CONTACT_FILE.test(listed.key)) continue;
      const object = await bucket.get(listed.key);
      if (!object) continue;
      const without = withContactRecordsBlanked(new Uint8Array(await object.arrayBuffer()), contact);
      if (!without) continue;
      await bucket.put(listed.key, without, { httpMetadata: object.httpMetadata, customMetadata: object.customMetadata });
      rewritten++;
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return rewritten;
}
