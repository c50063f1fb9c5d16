import { describe, expect, it } from 'vitest';
import { POSTGRES, SQLITE } from '../../src/store/sql/dialect.js';
import { NamedStatement } from '../../src/store/sql/named-statement.js';
import { statementsFor } from '../../src/store/sql/statements.js';

// Statements with many values name them (`:team`); the text is turned into each backend's positional form
// once, and a call's values come out of an object in the order the names stand.

describe('Named placeholders', () => {
  const text = 'SELECT 1 FROM t WHERE team = :team AND pos > :after AND other = :team LIMIT +:limit';

  it('a name binds its value wherever it stands: ? on SQLite, $1, $2... on PostgreSQL', () => {
    const sqlite = new NamedStatement<{ team: string; after: number; limit: number }>(text, 'sqlite');
    const postgres = new NamedStatement<{ team: string; after: number; limit: number }>(text, 'postgres');
    expect(sqlite.text).toBe('SELECT 1 FROM t WHERE team = ? AND pos > ? AND other = ? LIMIT +?');
    expect(postgres.text).toBe('SELECT 1 FROM t WHERE team = $1 AND pos > $2 AND other = $3 LIMIT +$4');
    const values = { limit: 5, after: 3, team: 'team_a' };
    expect(sqlite.values(values)).toEqual(['team_a', 3, 'team_a', 5]);
    expect(postgres.values(values)).toEqual(['team_a', 3, 'team_a', 5]);
  });

  it("a PostgreSQL cast and a colon inside a string literal's JSON are no placeholders", () => {
    const cast = new NamedStatement<{ ids: string }>(
      `SELECT json_array_elements_text(:ids::json), '{"a":1}'`,
      'postgres',
    );
    expect(cast.text).toBe(`SELECT json_array_elements_text($1::json), '{"a":1}'`);
    expect(cast.values({ ids: '[]' })).toEqual(['[]']);
  });

  it('a value the statement names but the call lacks is refused, naming it (null is a value)', () => {
    const statement = new NamedStatement<{ team?: string; email: string | null }>(
      'SELECT 1 WHERE team = :team AND email = :email',
      'sqlite',
    );
    expect(statement.values({ team: 't', email: null })).toEqual(['t', null]);
    expect(() => statement.values({ email: 'a@b.c' })).toThrow(':team has no value');
  });

  it('a text mixing ? with names is refused when the statements load', () => {
    expect(() => new NamedStatement('SELECT 1 WHERE a = ? AND b = :b', 'sqlite')).toThrow(/also holds a \?/);
  });

  it('the shared statements with many values (pages, search, feed, removals, retention) take named values', () => {
    for (const dialect of [SQLITE, POSTGRES]) {
      const sql = statementsFor(dialect);
      const named = [
        ...Object.values(sql.listPage),
        ...Object.values(sql.listRecords),
        sql.searchLeads,
        sql.feedPage,
        sql.removeRecord,
        sql.keepSupersededBody,
        sql.trimSuperseded,
      ];
      for (const statement of named) expect(statement).toBeInstanceOf(NamedStatement);
    }
  });
});
