import { describe, expect, it } from 'vitest';
import { normaliseDateTime } from '../../../src/write/events/date-time.js';

describe('normaliseDateTime', () => {
  it('a value already in stored form comes back as is; one in that form that names no instant is refused', () => {
    for (const v of [
      '2026-01-11T10:30:00.000Z',
      '0000-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
      '2024-02-29T12:00:00.000Z',
    ])
      expect(normaliseDateTime(v)).toBe(v);
    for (const v of [
      '2026-02-30T00:00:00.000Z',
      '2023-02-29T00:00:00.000Z',
      '2026-04-31T10:00:00.000Z',
      '2026-01-01T24:00:00.000Z',
      '2026-01-01T00:00:60.000Z',
      '2026-13-01T00:00:00.000Z',
    ])
      expect(normaliseDateTime(v)).toBeUndefined();
  });
});
