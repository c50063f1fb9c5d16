import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkEvent, parseEvent } from '../../src/write/events/parse-event.js';

// Validation and storage agree: every `at` the validator accepts becomes a stored value (UTC,
// milliseconds) naming the same instant; everything else is refused at validation.

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Date-time parts, including values out of range (day 31 of any month, second 60, hour 24, year 9999). */
const parts = fc.record({
  year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1, 99, 1970, 9999)),
  month: fc.integer({ min: 1, max: 12 }),
  day: fc.integer({ min: 1, max: 31 }),
  hour: fc.integer({ min: 0, max: 24 }),
  minute: fc.integer({ min: 0, max: 59 }),
  second: fc.option(fc.integer({ min: 0, max: 60 })),
  fraction: fc.option(fc.stringMatching(/^\d{1,9}$/)),
  offset: fc.option(
    fc.record({
      sign: fc.constantFrom('+', '-'),
      h: fc.integer({ min: 0, max: 23 }),
      m: fc.integer({ min: 0, max: 59 }),
    }),
  ),
  offsetStyle: fc.constantFrom('colon', 'compact', 'hours'),
  zulu: fc.constantFrom('Z', 'z'),
});
type Parts = typeof parts extends fc.Arbitrary<infer T> ? T : never;

function written(p: Parts): string {
  const seconds = p.second === null ? '' : `:${pad(p.second)}${p.fraction === null ? '' : `.${p.fraction}`}`;
  const o = p.offset;
  const offset =
    o === null
      ? p.zulu
      : p.offsetStyle === 'colon'
        ? `${o.sign}${pad(o.h)}:${pad(o.m)}`
        : p.offsetStyle === 'compact'
          ? `${o.sign}${pad(o.h)}${pad(o.m)}`
          : `${o.sign}${pad(o.h)}`;
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}${seconds}${offset}`;
}

/** The same instant in the one form `Date.parse` is specified to read, fraction cut to milliseconds. */
function reference(p: Parts): number {
  const ms = (p.second === null ? '' : (p.fraction ?? '')).slice(0, 3).padEnd(3, '0');
  const o = p.offset;
  const offset = o === null ? 'Z' : `${o.sign}${pad(o.h)}:${p.offsetStyle === 'hours' ? '00' : pad(o.m)}`;
  const year = p.year >= 0 ? pad(p.year, 4) : '';
  return Date.parse(
    `${year}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}:${pad(p.second ?? 0)}.${ms}${offset}`,
  );
}

const leap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const daysIn = (year: number, month: number) =>
  month === 2 ? (leap(year) ? 29 : 28) : [31, 0, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
/** Years 0000 to 9999 in UTC, the range stored dates keep their four-digit form in. */
const storable = (ms: number) => ms >= Date.parse('0000-01-01T00:00:00Z') && ms < Date.parse('+010000-01-01T00:00:00Z');

describe('ingest timestamps: validation and storage agree', () => {
  it('every timestamp that validates can be stored, as UTC with milliseconds naming the same instant; a leap second, a day the month lacks or an hour 24 is refused', () => {
    fc.assert(
      fc.property(parts, (p) => {
        const at = written(p);
        const event = { type: 'member.left', at, member: 'mem_a' };
        const checked = checkEvent(event);
        const parsed = parseEvent(event);
        expect(parsed.ok).toBe(checked.ok);
        const impossible = p.second === 60 || p.hour === 24 || p.day > daysIn(p.year, p.month);
        if (impossible) expect(checked.ok, at).toBe(false);
        else expect(checked.ok, at).toBe(storable(reference(p)));
        if (!parsed.ok) return;
        const stored = parsed.event.at;
        // The stored form is what Date writes back for itself: it can always be stored and read again.
        expect(new Date(stored).toISOString()).toBe(stored);
        expect(stored).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(Date.parse(stored)).toBe(reference(p));
      }),
      { numRuns: 3000 },
    );
  });

  it('a value without a UTC offset, with a zone name suffix or a space for T is refused with the rule, never the value', () => {
    for (const at of [
      '2031-07-04T08:15:00',
      '2031-07-04T08:15:00Z[Europe/Vienna]',
      '2031-07-04 08:15:00Z',
      'yesterday',
    ]) {
      const checked = checkEvent({ type: 'member.left', at, member: 'mem_a' });
      expect(checked).toMatchObject({ ok: false, field: 'at', message: expect.stringContaining('ISO 8601') });
      expect(checked.ok || checked.message.includes(at)).toBe(false);
    }
  });
});
