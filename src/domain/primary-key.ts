import { withoutFloatTail, type AttributeType } from "./attributes";
import { normaliseEmail } from "./email";
import { describeJsonType, fail, ok, type Checked } from "./problems";

const MAX_KEY_LENGTH = 254;

/**
 * Normalises a primary-key value so one contact has one key however a client spells it
 * (CONTRACT 2.2): EMAIL trimmed and lower-cased, MOBILE reduced to digits with an optional
 * leading `+` (the `.0` pandas adds to a number dropped first: CONTRACT 10); any other key
 * attribute is trimmed text (or an integer's decimal form, `34.0` being 34).
 */
export function normalisePrimaryKey(attribute: string, type: AttributeType, raw: unknown): Checked<string> {
  if (raw === null || raw === undefined) return fail("is required: it is the panel's primary key");
  if (attribute === "EMAIL") {
    if (typeof raw !== "string") return fail(`must be an email address, not ${describeJsonType(raw)}`);
    if (raw.trim() === "") return fail("is required: it is the panel's primary key");
    return normaliseEmail(raw);
  }
  if (attribute === "MOBILE") {
    if (typeof raw !== "string" && !(typeof raw === "number" && Number.isSafeInteger(raw) && raw > 0)) {
      return fail(`must be a mobile number, not ${describeJsonType(raw)}`);
    }
    const text = withoutFloatTail(String(raw).trim());
    const plus = text.startsWith("+") ? "+" : "";
    const rest = plus ? text.slice(1) : text;
    if (!/^[\d\s().-]+$/.test(rest)) return fail(`is not a valid mobile number: "${raw}"`);
    const digits = rest.replace(/\D/g, "");
    if (digits.length < 6 || digits.length > 15) return fail(`must have 6 to 15 digits: "${raw}"`);
    return ok(plus + digits);
  }
  if (type === "integer") {
    if (typeof raw === "number" && Number.isSafeInteger(raw)) return ok(String(raw));
    if (typeof raw === "string" && /^[+-]?\d+(?:\.0*)?$/.test(raw.trim())) return ok(String(Number(raw.trim())));
    return fail(`must be an integer, not ${describeJsonType(raw)}`);
  }
  if (typeof raw !== "string" && typeof raw !== "number") return fail(`must be a string, not ${describeJsonType(raw)}`);
  const text = String(raw).trim();
  if (text === "") return fail("is required: it is the panel's primary key");
  if (text.length > MAX_KEY_LENGTH) return fail(`must be at most ${MAX_KEY_LENGTH} characters`);
  return ok(text);
}
