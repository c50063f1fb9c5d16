import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { PhoneStatus } from '../../schemas/enums.js';

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
