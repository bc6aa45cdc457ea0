import { isRealCalendarDate } from "./attributes";
import { describeJsonType, fail, ok, type Checked } from "./problems";

/**
 * The service's time formats (DESIGN: times): `cts`/`ts` are YYMMDDhhmmss, `timestamp` is
 * ISO 8601 local time without zone, schedules are wall-clock times in the panel's time zone,
 * and storage is UTC epoch milliseconds.
 */

/**
 * True when `zone` is an IANA time zone the runtime knows (e.g. "Asia/Kolkata"). A known zone
 * keeps its formatter (wallClockAt's): sends check each recipient's TIMEZONE, and building an
 * Intl.DateTimeFormat costs tens of microseconds.
 */
export function isValidTimeZone(zone: string): boolean {
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

function checkedWallClock(parts: WallClock, text: string): Checked<WallClock> {
  if (!isRealCalendarDate(parts.year, parts.month, parts.day)) return fail(`is not a real calendar date: ${text}`);
  if (parts.hour > 23 || parts.minute > 59 || parts.second > 59) return fail(`is not a real time of day: ${text}`);
  return ok(parts);
}

const ZERO = 0x30;
const DASH = 0x2d;
const COLON = 0x3a;
const PLUS = 0x2b;

/** The `count` digits of `text` from `at` on as a number, or -1 when one of them is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - ZERO;
    // NaN past the end of the text fails the test too.
    if (!(digit >= 0 && digit <= 9)) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * Where each field of a date and time starts in a text of fixed layout: the year `yearDigits`
 * long and counted from `century`, the others two.
 */
type ClockLayout = WallClock & { yearDigits: number; century: number };

const CTS_LAYOUT: ClockLayout = { yearDigits: 2, century: 2000, year: 0, month: 2, day: 4, hour: 6, minute: 8, second: 10 };
const ISO_LAYOUT: ClockLayout = { yearDigits: 4, century: 0, year: 0, month: 5, day: 8, hour: 11, minute: 14, second: 17 };

/**
 * The fields of `text` laid out as `layout` says, read digit by digit (every activity of a
 * batch carries a time, and a pattern with six groups cost more than the rest of the event's
 * checks); undefined when one of them is not all digits. Ranges are checkedWallClock's.
 */
function clockAt(text: string, layout: ClockLayout): WallClock | undefined {
  const year = digitsAt(text, layout.year, layout.yearDigits);
  const month = digitsAt(text, layout.month, 2);
  const day = digitsAt(text, layout.day, 2);
  const hour = digitsAt(text, layout.hour, 2);
  const minute = digitsAt(text, layout.minute, 2);
  const second = digitsAt(text, layout.second, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return undefined;
  return { year: layout.century + year, month, day, hour, minute, second };
}

/** Reads `cts`: YYMMDDhhmmss (years 2000-2099), as text or a number. */
export function parseCts(value: string | number): Checked<WallClock> {
  const text = String(value).trim();
  const clock = text.length === 12 ? clockAt(text, CTS_LAYOUT) : undefined;
  if (!clock) return fail(`must be YYMMDDhhmmss (12 digits), not "${text}"`);
  return checkedWallClock(clock, text);
}

/** Reads `YYYY-MM-DD HH:mm:SS` (the broadcast `schedule_date`). */
export function parseLocalDateTime(text: string): Checked<WallClock> {
  const match = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(text.trim());
  if (!match) return fail(`must be YYYY-MM-DD HH:mm:SS, not "${text}"`);
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [number, number, number, number, number, number];
  return checkedWallClock({ year, month, day, hour, minute, second }, text);
}

/** A date alone (`2024-01-31`, as CRMs export a day's events) is that day's midnight. */
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/** A zone offset as written (`+05:30`, `-0800`, `+01`), not yet checked. */
interface ZoneOffset {
  sign: 1 | -1;
  hours: number;
  minutes: number;
}

interface IsoParts {
  clock: WallClock;
  /** The fraction of a second as written (`.5`), or undefined. */
  fraction: string | undefined;
  /** UTC (`Z`), an offset, or undefined for a wall-clock time in the panel's zone. */
  zone: "Z" | ZoneOffset | undefined;
}

/**
 * `YYYY-MM-DDThh:mm:ss` alone, with `Z` or with `+hh:mm`, as nearly every client sends it, read
 * character by character as parseCts reads its digits: the pattern cost twice the rest of an
 * upload event's checks (bench:activity part 2b). Undefined for any other text.
 */
function commonIsoParts(text: string): IsoParts | undefined {
  const length = text.length;
  if (length !== 19 && length !== 20 && length !== 25) return undefined;
  if (text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH || text.charCodeAt(13) !== COLON || text.charCodeAt(16) !== COLON) return undefined;
  if (!"Tt ".includes(text[10]!)) return undefined;
  const clock = clockAt(text, ISO_LAYOUT);
  if (!clock) return undefined;
  let zone: IsoParts["zone"];
  if (length === 20) {
    if (text[19] !== "Z" && text[19] !== "z") return undefined;
    zone = "Z";
  } else if (length === 25) {
    const sign = text.charCodeAt(19);
    const hours = digitsAt(text, 20, 2);
    const minutes = digitsAt(text, 23, 2);
    if ((sign !== PLUS && sign !== DASH) || text.charCodeAt(22) !== COLON || hours < 0 || minutes < 0) return undefined;
    zone = { sign: sign === DASH ? -1 : 1, hours, minutes };
  }
  return { clock, fraction: undefined, zone };
}

function isoParts(text: string): IsoParts | undefined {
  const common = commonIsoParts(text);
  if (common) return common;
  const match = ISO_TIMESTAMP.exec(text);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = match;
  const clock = { year: Number(y), month: Number(mo), day: Number(d), hour: Number(h ?? 0), minute: Number(mi ?? 0), second: Number(s ?? 0) };
  if (zone === undefined) return { clock, fraction, zone: undefined };
  if (zone.toUpperCase() === "Z") return { clock, fraction, zone: "Z" };
  const digits = zone.slice(1).replace(":", "");
  return { clock, fraction, zone: { sign: zone.startsWith("-") ? -1 : 1, hours: Number(digits.slice(0, 2)), minutes: Number(digits.slice(2) || "0") } };
}

/**
 * Reads an ISO 8601 date-time (`timestamp` of an activity) as an instant. With `Z` or an
 * offset the text says its own zone; without one (the spec's `YYYY-MM-DDThh:mm:ss`) it is a
 * wall-clock time in `timeZone`.
 */
export function parseIsoTimestamp(text: string, timeZone: string): Checked<number> {
  const trimmed = text.trim();
  const parts = isoParts(trimmed);
  if (!parts) return fail(`must be an ISO 8601 date-time such as 2024-01-31T18:05:00, not "${text}"`);
  const { fraction, zone } = parts;
  const clock = checkedWallClock(parts.clock, trimmed);
  if (!clock.ok) return clock;
  const millis = fraction ? Math.floor(Number(`0${fraction}`) * 1000) : 0;
  if (zone === undefined) return ok(instantOf(clock.value, timeZone) + millis);
  if (zone === "Z") return ok(asUtc(clock.value) + millis);
  if (zone.hours > 23 || zone.minutes > 59) return fail(`has an impossible zone offset: "${text}"`);
  return ok(asUtc(clock.value) - zone.sign * (zone.hours * 60 + zone.minutes) * 60_000 + millis);
}

/** The forms in which a client may say when an event happened; each route names those it takes. */
export type EventTimeForm = "cts" | "iso" | "epoch";

const EPOCH_TEXT = /^\d+(?:\.\d+)?$/;

/**
 * Epoch seconds (10 digits, a fraction allowed: what `time.time()` gives) or milliseconds (13
 * digits), as a number or digit text. Other magnitudes are refused rather than guessed: an
 * 8-digit YYYYMMDD or a 12-digit YYMMDDhhmmss read as epoch would land in 1970 or 1973.
 */
function readEpoch(value: string | number): Checked<number> {
  const text = String(value).trim();
  const refusal = fail<number>(`must be epoch seconds (10 digits) or milliseconds (13 digits), not "${text}"`);
  if (typeof value === "string" && !EPOCH_TEXT.test(text)) return refusal;
  const n = Number(text);
  if (n >= 1e9 && n < 1e11) return ok(Math.round(n * 1000));
  if (n >= 1e12 && n < 1e14) return ok(Math.floor(n));
  return refusal;
}

const EVENT_TIME_READERS: Record<EventTimeForm, { name: string; read(value: string | number, timeZone: string): Checked<number> }> = {
  cts: {
    name: "YYMMDDhhmmss",
    read(value, timeZone) {
      const clock = parseCts(value);
      return clock.ok ? ok(instantOf(clock.value, timeZone)) : clock;
    },
  },
  iso: {
    name: "an ISO 8601 date-time",
    read: (value, timeZone) => parseIsoTimestamp(String(value), timeZone),
  },
  epoch: {
    name: "epoch seconds or milliseconds",
    read: (value) => readEpoch(value),
  },
};

/**
 * How far ahead of now an event time may be: clocks disagree a little, but an event is
 * something that happened. Further ahead is a misread date (DDMMYY sent as YYMMDD lands in
 * 2030) and is refused rather than stored in the future.
 */
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** The start of the UTC hour `at` falls in (the hour of hourly aggregates). */
export function utcHourOf(at: number): number {
  return Math.floor(at / HOUR_MS) * HOUR_MS;
}

/** The start of the UTC day `at` falls in. */
export function utcDayOf(at: number): number {
  return Math.floor(at / DAY_MS) * DAY_MS;
}

export const MAX_EVENT_LEAD_MS = 24 * HOUR_MS;

/**
 * When an event happened (activity `cts`/`timestamp`, channel report `ts`, webhook event
 * `event_params.ts`), read in the panel's zone unless the text names its own. Absent (undefined,
 * null or blank text) is `now`. With one form the refusal is that form's own reason. A time
 * more than MAX_EVENT_LEAD_MS ahead of `now` is refused, naming the instant it was read as.
 */
export function resolveEventTime(value: unknown, forms: readonly EventTimeForm[], timeZone: string, now: number): Checked<number> {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) return ok(now);
  // Every event of a batch passes here: the forms' names are joined only for a refusal.
  const named = () => forms.map((form) => EVENT_TIME_READERS[form].name).join(" or ");
  if (typeof value !== "string" && typeof value !== "number") return fail(`must be ${named()}, not ${describeJsonType(value)}`);
  let refusal: Checked<number> | undefined;
  for (const form of forms) {
    const read = EVENT_TIME_READERS[form].read(value, timeZone);
    if (read.ok) {
      if (read.value - now <= MAX_EVENT_LEAD_MS) return read;
      return fail(`is more than 24 hours ahead of now: it reads as ${new Date(read.value).toISOString()}; an event time says when something happened`);
    }
    if (forms.length === 1) refusal = read;
  }
  return refusal ?? fail(`must be ${named()}`);
}

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Zones are case-insensitive, so contacts' TIMEZONE values may spell one many ways: the cache stays bounded. */
const MAX_FORMATTERS = 1_000;

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(timeZone, format);
  }
  return format;
}

function asUtc(clock: WallClock): number {
  return Date.UTC(clock.year, clock.month - 1, clock.day, clock.hour, clock.minute, clock.second);
}

/** The zone's offset (wall clock minus UTC, ms) at a whole-second instant, read from Intl. */
function intlOffset(wholeSecond: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(wholeSecond))) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) - wholeSecond;
}

const MAX_CACHED_HOURS = 10_000;
/** Per zone, offsets by UTC hour number (a number key: no key text to build and hash per reading). */
const hourOffsets = new Map<string, Map<number, number>>();
let cachedHours = 0;

/**
 * The zone's offset at an instant. Intl takes tens of microseconds per reading, which made
 * time conversion the largest cost of activity ingest, so offsets are cached per zone and UTC
 * hour; only for hours that start and end on the same offset, so an hour holding a
 * transition is always read from Intl (no zone changes its offset twice within an hour).
 */
function offsetAt(epochMs: number, timeZone: string): number {
  const hour = Math.floor(epochMs / HOUR_MS);
  const cached = hourOffsets.get(timeZone)?.get(hour);
  if (cached !== undefined) return cached;
  const start = intlOffset(hour * HOUR_MS, timeZone);
  if (start === intlOffset(hour * HOUR_MS + HOUR_MS - 1000, timeZone)) {
    if (cachedHours >= MAX_CACHED_HOURS) {
      hourOffsets.clear();
      cachedHours = 0;
    }
    let zone = hourOffsets.get(timeZone);
    if (!zone) hourOffsets.set(timeZone, (zone = new Map()));
    zone.set(hour, start);
    cachedHours++;
    return start;
  }
  return intlOffset(epochMs - (((epochMs % 1000) + 1000) % 1000), timeZone);
}

/** The wall-clock reading in `timeZone` at an instant. */
export function wallClockAt(epochMs: number, timeZone: string): WallClock {
  const shifted = new Date(epochMs + offsetAt(epochMs, timeZone));
  return {
    year: shifted.getUTCFullYear(),
    month: shifted.getUTCMonth() + 1,
    day: shifted.getUTCDate(),
    hour: shifted.getUTCHours(),
    minute: shifted.getUTCMinutes(),
    second: shifted.getUTCSeconds(),
  };
}

/**
 * The instant at which `timeZone` shows this wall-clock time. A time that does not exist (a
 * daylight-saving gap) is read with the offset after the change, so 02:30 on New York's
 * spring-forward day is 06:30Z; a time that exists twice (an overlap) is the earlier instant.
 */
export function instantOf(clock: WallClock, timeZone: string): number {
  const guess = asUtc(clock);
  const first = guess - offsetAt(guess, timeZone);
  const second = guess - offsetAt(first, timeZone);
  return Math.min(first, second);
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** `ts`/`cts` form: YYMMDDhhmmss in the zone. */
export function formatCts(epochMs: number, timeZone: string): string {
  const c = wallClockAt(epochMs, timeZone);
  return `${pad(c.year % 100)}${pad(c.month)}${pad(c.day)}${pad(c.hour)}${pad(c.minute)}${pad(c.second)}`;
}

/** `timestamp` form: YYYY-MM-DDThh:mm:ss in the zone, without the zone. */
export function formatLocalIso(epochMs: number, timeZone: string): string {
  const c = wallClockAt(epochMs, timeZone);
  return `${pad(c.year, 4)}-${pad(c.month)}-${pad(c.day)}T${pad(c.hour)}:${pad(c.minute)}:${pad(c.second)}`;
}
