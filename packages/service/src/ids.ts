import { randomBytes } from 'node:crypto';
import { ID_PREFIXES, type IdPrefixed } from './schemas/enums.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `n` base62 characters from the system CSPRNG (rejection sampling keeps them unbiased). */
export function base62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const byte of randomBytes(n * 2)) {
      if (byte < 248 && out.length < n) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

/** A new public id such as `lead_3kTMd92hF0aQ7xVb`. */
export function newId(kind: IdPrefixed): string {
  return `${ID_PREFIXES[kind]}${base62(16)}`;
}
