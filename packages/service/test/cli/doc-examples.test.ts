import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli, startCli, tempDir } from './cli.js';
import { commentOf, docBlock, docSpan, docText, examplePattern } from './doc-examples.js';

// What README.md and docs/ show `start`, `admin` and a bad setting print, against what they print today
// (keys and ports normalised: they differ on every run). docs/ingest.md: ingest-doc-examples.test.ts.

describe('every example output of README.md and docs/ is what the command prints', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  afterAll(() => tmp.remove());

  it('start: the first start of the README, line for line, and its excerpts in the docs', async () => {
    const server = await startCli(['start', '--db', tmp.db('start'), '--port', '0']);
    try {
      const raw = server.stdout();
      const api = /crm-export is serving http:\/\/127\.0\.0\.1:(\d+)\/v1/.exec(raw)?.[1] as string;
      const ops = /operator listener: http:\/\/127\.0\.0\.1:(\d+) /.exec(raw)?.[1] as string;
      const internal = /internal listener: http:\/\/127\.0\.0\.1:(\d+) /.exec(raw)?.[1] as string;
      // The docs show the default ports (3000, 3001 for the operator listener, 3002 for the internal one); the
      // key is never the same.
      const printed = raw
        .replaceAll(`127.0.0.1:${api}`, '127.0.0.1:3000')
        .replaceAll(`127.0.0.1:${ops}`, '127.0.0.1:3001')
        .replaceAll(`127.0.0.1:${internal}`, '127.0.0.1:3002')
        .replace(/crmx_live_[0-9A-Za-z]+/g, 'crmx_live_...');
      expect(printed).toBe(docBlock('README.md', 'crm-export is serving'));
      expect(printed).toContain(docBlock('docs/reference.md', 'crm-export is serving'));

      // The curl command works as printed, and answers with the budget headers docs/limits.md shows.
      const [, key, team, url] = /"Authorization: Bearer (\S+)" -H "Service-Team: (\S+)" '(\S+)'/.exec(raw) ?? [];
      const headers = { authorization: `Bearer ${key}`, 'service-team': team as string };
      const answer = await fetch(url as string, { headers });
      expect(answer.status).toBe(200);
      const [policy, budget] = docBlock('docs/limits.md', 'RateLimit-Policy:').trimEnd().split('\n');
      expect(`RateLimit-Policy: ${answer.headers.get('ratelimit-policy')}`).toBe(policy);
      expect(`RateLimit: ${answer.headers.get('ratelimit')}`).toMatch(
        examplePattern((budget as string).replace(/=\d+/g, '=N')),
      );

      // The readiness body of docs/operations.md (shown with a Redis; this start has none).
      const ready = await (await fetch(`http://127.0.0.1:${ops}/readyz`)).text();
      expect(ready.replace('"redis":"off"', '"redis":"up"')).toBe(
        docBlock('docs/operations.md', '"status":"ready"').trimEnd(),
      );
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('admin: refusals as --json shows them, the lists as text, a missing database, a new key', async () => {
    const db = tmp.db('admin');
    const events = docBlock('docs/ingest.md', '"type":"organization.upsert"');
    expect((await runCli(['ingest', '--db', db, '-'], { input: events })).code).toBe(0);

    // A live team refused by a sandbox command, and any refusal with --json (docs/operations.md).
    const live = await runCli(['admin', 'sandbox', 'expire-cursors', '--team', 'team_acme1', '--json', '--db', db]);
    expect(live.code).toBe(1);
    expect(live.stdout.trimEnd()).toMatch(examplePattern(docSpan('docs/testing-your-consumer.md', '"live_team"')));
    expect(live.stderr).toContain('team_acme1 is a live team');
    const unknown = await runCli(['admin', 'sandbox', 'expire-cursors', '--team', 'team_nope', '--json', '--db', db]);
    expect(unknown.code).toBe(1);
    const shape = examplePattern(docSpan('docs/operations.md', '{"error":{"code":"...'));
    expect(unknown.stdout.trimEnd()).toMatch(shape);
    expect(JSON.parse(unknown.stdout)).toEqual({ error: { code: 'not_found', message: expect.any(String) } });

    // README.md: `admin integrations create ... --json` prints the key once, in a `key` field.
    expect(docText('README.md')).toContain('prints its key once, in a `key` field');
    const create = 'admin integrations create --teams team_acme1 --name W --json'.split(' ');
    const created = await runCli([...create, '--db', db]);
    expect(JSON.parse(created.stdout)).toMatchObject({ key: expect.stringMatching(/^crmx_live_/) });

    // The lists of docs/auth.md: aligned columns under a header row, `(none)` when empty.
    const empty = tmp.db('empty');
    expect((await runCli(['migrate', '--db', empty])).code).toBe(0);
    expect(docText('docs/auth.md')).toContain('an empty list prints `(none)`');
    for (const list of [
      ['orgs', 'list'],
      ['teams', 'list'],
      ['integrations', 'list'],
      ['audit', 'list'],
    ]) {
      expect((await runCli(['admin', ...list, '--db', empty])).stdout, list.join(' ')).toBe('(none)\n');
      const [header, ...rows] = (await runCli(['admin', ...list, '--db', db])).stdout.trimEnd().split('\n');
      expect(header, list.join(' ')).toMatch(/^[A-Z][A-Z ]*[A-Z]$/);
      // Every column starts where its name does, in every row (an empty last cell ends the row).
      const starts = [...(header as string).matchAll(/(?<=^| {2})[A-Z]/g)].map((m) => m.index);
      for (const row of rows) {
        for (const at of starts.filter((at) => at < row.length)) {
          expect(`${row[at - 1] ?? ' '}${row[at]}`, row).toMatch(/^ \S$/);
        }
        expect(row.length, row).toBeGreaterThan(starts.at(-2) as number);
      }
    }

    // docs/configuration.md: a mistyped --db names the file it did not find, from the repository root.
    const said = commentOf(docBlock('docs/configuration.md', 'typo.db'), 'npx crm-export admin teams list');
    const typo = await runCli(['admin', 'teams', 'list', '--db', 'sqlite:./typo.db']);
    expect([typo.code, said.endsWith(' exits 1')]).toEqual([1, true]);
    const message = said.replace(/ exits 1$/, '').replace('/repo/', `${REPO_ROOT}/`);
    expect(typo.stderr.trimEnd()).toMatch(examplePattern(message));
  });

  it('settings: the three refusals docs/configuration.md shows, each the first line the command prints', async () => {
    const [port, limits, flag] = docBlock('docs/configuration.md', 'must be an integer').trimEnd().split('\n');
    const db = tmp.db('settings');
    const runs = [
      await runCli(['serve', '--db', db], { env: { PORT: 'abc' } }),
      await runCli(['serve', '--db', db], { env: { CRM_EXPORT_LIMITS: '{"keyCacheMs":600000}' } }),
      await runCli(['serve', '--db', db, '--port', 'abc']),
    ];
    expect(runs.map((run) => [run.code, run.stderr.split('\n')[0]])).toEqual([
      [1, port],
      [1, limits],
      [1, flag],
    ]);
  });
});
