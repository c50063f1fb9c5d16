import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerToken, hasWellFormedKey, parseKey } from '../../src/access/keys.js';
import type { Store } from '../../src/store/store.js';
import { type AccessHarness, accessHarness } from '../access/http-harness.js';
import { describeEachBackend } from '../support/backends.js';

// A valid key sent as `bearer <key>` was accepted by authentication but counted by the firewall as
// a request without a well-formed key, so the 301st such request got the firewall's plain 429 for 10 minutes.

describeEachBackend('the firewall and authentication read the Authorization scheme alike', (makeStore) => {
  let store: Store;
  let h: AccessHarness;
  beforeAll(async () => {
    store = await makeStore();
    h = await accessHarness(store);
  });
  afterAll(async () => {
    await h.app.close();
    await store.close();
  });

  it('a valid key with the scheme written bearer or BEARER is a well-formed key: 301 such requests from one address all get 200, never the firewall 429', async () => {
    const secret = h.key.slice('Bearer '.length);
    const spellings = [`bearer ${secret}`, `BEARER ${secret}`, `bEaReR ${secret}`, `Bearer  ${secret}`];
    for (let i = 0; i < 301; i++) {
      const res = await h.inject('/v1/me', { key: spellings[i % spellings.length], ip: '203.0.113.50' });
      expect(res.statusCode, `request ${i + 1}`).toBe(200);
    }
    // The budget still counts requests without a key: the address was never blocked by the ones above.
    const unkeyed = await h.inject('/v1/me', { key: undefined, ip: '203.0.113.50' });
    expect(unkeyed.statusCode).toBe(401);
  });
});

describe('the firewall well-formed test', () => {
  it('every Authorization header authentication can accept is well-formed for the firewall (property)', () => {
    const key = fc.string({ unit: fc.constantFrom(...'0123456789abcXYZ'), minLength: 44, maxLength: 44 });
    const scheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'BeArEr', 'Basic', 'Bearer:', '');
    const header = fc
      .tuple(scheme, fc.constantFrom(' ', '  ', '', '\t'), fc.constantFrom('crmx_live_', 'crmx_test_', 'x'), key)
      .map(([s, sep, prefix, k]) => `${s}${sep}${prefix}${k}`);
    fc.assert(
      fc.property(fc.oneof(header, fc.string()), (value) => {
        const token = bearerToken(value);
        if (token !== undefined && parseKey(token) !== null) expect(hasWellFormedKey(value)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('the scheme is case-insensitive and needs one or more spaces before the key', () => {
    const k = `crmx_live_${'a'.repeat(44)}`;
    for (const ok of [`Bearer ${k}`, `bearer ${k}`, `BEARER ${k}`, `Bearer   ${k}`, `Bearer ${k} `]) {
      expect(hasWellFormedKey(ok), ok).toBe(true);
    }
    for (const bad of [`Bearer${k}`, `Basic ${k}`, `Bearer\t${k}`, `Bearer ${k}!`, k, 'Bearer ']) {
      expect(hasWellFormedKey(bad), bad).toBe(false);
    }
  });
});
