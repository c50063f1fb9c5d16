import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConnectionKeys, keyMatches } from '../../src/access/keys.js';

const pepper = Buffer.from('pepper for the connection key tests');
const key = 'crmx_live_AbCdEfGhIjKl0123456789abcdefghijklmnopqrstuv';
const digestOf = (k: string) => createHmac('sha256', pepper).update(k, 'utf8').digest('hex');
const other = `${key.slice(0, -4)}ZZZZ`;

/** ConnectionKeys over the real check, counting how often the HMAC is computed. */
function counted() {
  let hashes = 0;
  const keys = new ConnectionKeys((p, k, d) => {
    hashes++;
    return keyMatches(p, k, d);
  });
  return { keys, hashes: () => hashes };
}

describe('a key presented again on the same connection (keys.ts ConnectionKeys)', () => {
  it('is not hashed again on the connection it matched on; another connection hashes it once', () => {
    const { keys, hashes } = counted();
    const a = {};
    const b = {};
    for (let i = 0; i < 5; i++) expect(keys.matches(a, pepper, key, digestOf(key))).toBe(true);
    expect(hashes()).toBe(1);
    expect(keys.matches(b, pepper, key, digestOf(key))).toBe(true);
    expect(keys.matches(b, pepper, key, digestOf(key))).toBe(true);
    expect(hashes()).toBe(2);
  });

  it('a key differing only in its secret is hashed and refused on a connection the right key matched on', () => {
    const { keys, hashes } = counted();
    const connection = {};
    expect(keys.matches(connection, pepper, key, digestOf(key))).toBe(true);
    expect(keys.matches(connection, pepper, other, digestOf(key))).toBe(false);
    expect(hashes()).toBe(2);
    // The refused key leaves the memo as it was: the right key still passes without a hash.
    expect(keys.matches(connection, pepper, key, digestOf(key))).toBe(true);
    expect(hashes()).toBe(2);
  });

  it('a memo counts only for the stored digest it matched: another digest hashes again', () => {
    const { keys, hashes } = counted();
    const connection = {};
    expect(keys.matches(connection, pepper, key, digestOf(key))).toBe(true);
    expect(keys.matches(connection, pepper, key, digestOf(other))).toBe(false);
    expect(hashes()).toBe(2);
  });

  it('without a connection every check hashes, and a wrong key is never remembered', () => {
    const { keys, hashes } = counted();
    expect(keys.matches(undefined, pepper, key, digestOf(key))).toBe(true);
    expect(keys.matches(undefined, pepper, key, digestOf(key))).toBe(true);
    const connection = {};
    expect(keys.matches(connection, pepper, other, digestOf(key))).toBe(false);
    expect(keys.matches(connection, pepper, other, digestOf(key))).toBe(false);
    expect(hashes()).toBe(4);
  });
});
