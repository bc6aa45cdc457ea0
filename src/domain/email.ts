import { fail, ok, type Checked } from "./problems";

/**
 * The one email-address rule of the service: contact keys (CONTRACT 2.2), senders, notify and
 * alert recipients, users. Deliberately lenient in the local part (RFC 5322 allows much more
 * than letters and digits); it refuses what cannot be an address: spaces, a missing `@` or
 * domain dot, and the characters that separate or quote addresses in a header.
 */
const ADDRESS = /^[^\s@"(),:;<>[\]\\]+@[^\s@"(),:;<>[\]\\]+\.[^\s@"(),:;<>[\]\\]+$/;
export const MAX_EMAIL_LENGTH = 254;
/** The attribute campaign and journey mail is sent to. */
export const EMAIL_ATTRIBUTE = "EMAIL";

/**
 * A non-ASCII local part (`chloé@…`) can only travel over SMTPUTF8, which neither provider
 * here (the outbox, Amazon SES) offers: such an address is refused where it enters, saying
 * why, rather than written raw into a header. A non-ASCII domain is fine: headers carry its
 * ASCII (punycode) form.
 */
const ASCII_LOCAL_PART = /^[\x21-\x7e]+@/;

/** Whether normalised text (trimmed, lower-cased) is an email address mail can be sent to. */
export function isEmailAddress(text: string): boolean {
  return text.length <= MAX_EMAIL_LENGTH && ADDRESS.test(text) && ASCII_LOCAL_PART.test(text);
}

/** Why normalised text is not an address mail can be sent to; null when it is one. */
export function emailAddressProblem(text: string, raw = text): string | null {
  if (text.length > MAX_EMAIL_LENGTH || !ADDRESS.test(text)) return `is not a valid email address: "${raw}"`;
  if (!ASCII_LOCAL_PART.test(text)) {
    return `has a non-ASCII local part ("${text.slice(0, text.lastIndexOf("@"))}"): that needs SMTPUTF8, which the email provider does not support`;
  }
  return null;
}

/**
 * Why an EMAIL attribute that is not the panel's primary key cannot be stored: an address whose
 * local part needs SMTPUTF8 is refused as the key is; any other text is kept as sent (mail to
 * it is skipped at send for having no valid EMAIL, as before).
 */
export function secondaryEmailProblem(text: string): string | null {
  const email = text.trim().toLowerCase();
  if (!ADDRESS.test(email) || ASCII_LOCAL_PART.test(email)) return null;
  return emailAddressProblem(email, text);
}

/** One address, trimmed and lower-cased so one mailbox has one spelling. */
export function normaliseEmail(raw: string): Checked<string> {
  const email = raw.trim().toLowerCase();
  const problem = emailAddressProblem(email, raw);
  return problem ? fail(problem) : ok(email);
}

/** Splits `a@x.com, b@y.com; c@z.com` into trimmed, lower-cased parts; empty parts are dropped. */
export function splitAddresses(text: string): string[] {
  return text
    .split(/[,;]/)
    .map((part) => part.trim().toLowerCase())
    .filter((part) => part !== "");
}

/**
 * An address list in one text (`notifyemail`, `notify_me`): separated by commas or semicolons,
 * each an address, a repeated one kept once, one to `max` of them. Every bad address is named.
 */
export function parseAddressList(text: string, max: number): Checked<string[]> {
  const addresses = [...new Set(splitAddresses(text))];
  const bad = addresses.filter((address) => !isEmailAddress(address));
  if (bad.length) return fail(`is not an email address: ${bad.join(", ")}`);
  if (addresses.length === 0) return fail("must hold at least one email address, comma separated");
  if (addresses.length > max) return fail(`must hold at most ${max} email addresses, not ${addresses.length}`);
  return ok(addresses);
}
