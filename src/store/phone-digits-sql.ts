/** What JavaScript's `\s` counts as blank in a number that SQLite's trim() does not by default: tab, line ends, form feed, no-break space. */
const BLANKS = "' ' || char(9, 10, 11, 12, 13, 160)";

/**
 * A number as domain/sms.ts phoneDigits reads it, in SQL over the text `raw`: trimmed, one
 * leading `+` dropped, then blanks, brackets, dots and dashes. A number phoneDigits refuses
 * (letters, a `+` past the first character, fewer than 6 or more than 15 digits) comes out as
 * text no sms_suppressions row holds, those being phoneDigits' digits alone, so comparing this
 * with `phone` finds the number's stop exactly when phoneDigits does (erased hashes aside).
 */
export function phoneDigitsSql(raw: string): string {
  const trimmed = `trim(${raw}, ${BLANKS})`;
  let digits = `substr(${trimmed}, (${trimmed} LIKE '+%') + 1)`;
  for (const drop of ["' '", "char(9)", "char(10)", "char(11)", "char(12)", "char(13)", "char(160)", "'('", "')'", "'.'", "'-'"]) digits = `replace(${digits}, ${drop}, '')`;
  return digits;
}
