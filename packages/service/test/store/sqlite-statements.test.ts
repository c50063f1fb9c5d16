import { describe, expect, it } from 'vitest';
import { POSTGRES, SQLITE } from '../../src/store/sql/dialect.js';
import { statementsFor } from '../../src/store/sql/statements.js';

// SQLite plans with the value bound to a bare `LIMIT ?`, so binding a new value marks the prepared statement
// stale and the next call prepares it again (every list and feed page did, before this rule). The dialect's
// `limit` puts an expression around the parameter. Nothing here can see the re-preparation itself
// (better-sqlite3 exposes no statement counters), so the rule is held on the statement texts.

/** Every statement text of a backend, the audit query's included. */
function texts(statements: ReturnType<typeof statementsFor>): string[] {
  const out: string[] = [];
  const collect = (value: unknown) => {
    if (typeof value === 'string') out.push(value);
    else if (typeof value === 'function') collect((value as (q: object) => { text: string })({ limit: 10 }).text);
    else if (value && typeof value === 'object') for (const inner of Object.values(value)) collect(inner);
  };
  collect(statements);
  return out;
}

describe('Statement texts and bound limits', () => {
  it('SQLite statements bind no bare LIMIT parameter, so a new limit does not prepare them again', () => {
    const sqlite = texts(statementsFor(SQLITE));
    expect(sqlite.filter((text) => /LIMIT\s+\?/i.test(text))).toEqual([]);
    // The pages, the feed, search, audit and retention all take a bound limit.
    expect(sqlite.filter((text) => text.includes('LIMIT +?')).length).toBeGreaterThanOrEqual(9);
  });

  it('PostgreSQL statements keep a plain numbered LIMIT parameter', () => {
    const postgres = texts(statementsFor(POSTGRES));
    expect(postgres.filter((text) => /LIMIT\s+\+/i.test(text))).toEqual([]);
    expect(postgres.filter((text) => /LIMIT \$\d+/.test(text)).length).toBeGreaterThanOrEqual(9);
  });
});
