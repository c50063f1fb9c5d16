// The date-times events accept: ISO 8601 extended format with a UTC offset, seconds optional, any
// fraction. Every value that passes is stored as UTC with milliseconds, so validation and storage agree.

/**
 * Syntax, as a JSON Schema `pattern`: `YYYY-MM-DDThh:mm[:ss[.fff...]]` then `Z`, `±hh:mm`, `±hhmm` or `±hh`.
 * Seconds stop at 59: JavaScript dates have no leap second, so `:60` is refused rather than moved.
 */
export const DATE_TIME_PATTERN =
  '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])[Tt]([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d(\\.\\d+)?)?([Zz]|[+-]([01]\\d|2[0-3])(:?[0-5]\\d)?)$';

export const DATE_TIME_RULE =
  'must be an ISO 8601 date-time with a UTC offset, such as 2026-01-10T09:00:00Z or 2026-01-10T11:00+0200 (seconds 00-59, no leap second)';

/** Compiled once: every event's date-times go through `normaliseDateTime`, some more than once. */
const SYNTAX = new RegExp(DATE_TIME_PATTERN);
const PARTS = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?(?:[Zz]|([+-])(\d\d)(?::?(\d\d))?)$/;
/** The only form stored: what `Date#toISOString` gives for years 0000 to 9999. */
const STORED = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const dateText = (ms: number) => (Number.isNaN(ms) ? undefined : new Date(ms).toISOString());

/**
 * The value as stored (UTC, milliseconds, `Z`), or undefined when it is not an accepted date-time: wrong
 * syntax, a day the month does not have (`2026-02-30`), or a UTC instant outside years 0000 to 9999.
 * Digits beyond milliseconds are cut, not rounded.
 */
export function normaliseDateTime(value: string): string | undefined {
  // Most values arrive in stored form already (events built from stored times, the demo's, ingest files
  // written by tools): when parsing and printing gives the same text back, it is a valid instant as is.
  if (value.length === 24 && STORED.test(value) && dateText(Date.parse(value)) === value) return value;
  if (!SYNTAX.test(value)) return undefined;
  const m = PARTS.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const second = Number(m[6] ?? 0);
  const ms = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'));
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0 to 99 as 1900 to 1999.
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  date.setUTCHours(hour, minute, second, ms);
  const sign = m[8] === '-' ? -1 : 1;
  const offsetMinutes = m[8] ? sign * (Number(m[9]) * 60 + Number(m[10] ?? 0)) : 0;
  const utc = new Date(date.getTime() - offsetMinutes * 60_000);
  if (Number.isNaN(utc.getTime())) return undefined;
  const stored = utc.toISOString();
  return STORED.test(stored) ? stored : undefined;
}
