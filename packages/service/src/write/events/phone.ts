import { createRequire } from 'node:module';
import type { PhoneStatus } from '../../schemas/enums.js';

const require = createRequire(import.meta.url);
let library: typeof import('libphonenumber-js') | undefined;

/**
 * libphonenumber-js's parser. The library and its metadata (about 120 modules) load on the first number
 * parsed, not when a server starts (synchronously, as the write side's projections are).
 */
export function parsePhoneNumberFromString(
  raw: string,
): ReturnType<typeof import('libphonenumber-js').parsePhoneNumberFromString> {
  library ??= require('libphonenumber-js') as typeof import('libphonenumber-js');
  return library.parsePhoneNumberFromString(raw);
}

/**
 * A lead's phone as exported: E.164 only when the number validates without a default country (a
 * number stored without its country prefix cannot be placed, so it reads `invalid`).
 */
export function normalisePhone(raw: string | null | undefined): { phone: string | null; status: PhoneStatus } {
  if (raw === null || raw === undefined || raw.trim() === '') return { phone: null, status: 'missing' };
  const parsed = parsePhoneNumberFromString(raw);
  if (parsed?.isValid()) return { phone: parsed.number, status: 'valid' };
  return { phone: null, status: 'invalid' };
}
