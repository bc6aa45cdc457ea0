/** True when `zone` is an IANA time zone the runtime knows (e.g. "Asia/Kolkata"). */
export function isValidTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
