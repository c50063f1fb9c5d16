// The published shape of @crm-export/client: `npm pack`, installed into an empty project outside this
// repository, imported from plain JavaScript (no TypeScript, no tsx) and used to sync a page.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeServer, leadObject, startFakeServer } from '../support/fake-server.js';

const run = promisify(execFile);
const CLIENT_DIR = fileURLToPath(new URL('../..', import.meta.url));
const REPO_BETTER_SQLITE = join(CLIENT_DIR, '../../node_modules/better-sqlite3');
const NETWORK_CODES = /ENOTCACHED|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET/;

const CONSUMER = `
import { CrmExportClient, MirrorStore, SyncEngine, openMirror } from '@crm-export/client';
const [baseUrl, key, path] = process.argv.slice(2);
const mirror = await openMirror('sqlite:' + path);
const client = new CrmExportClient({ baseUrl, key });
const outcomes = await new SyncEngine({ client, store: new MirrorStore(mirror.db), key, once: true }).run();
const rows = await mirror.db.selectFrom('mirror_records').select(['team', 'kind', 'id', 'version']).orderBy('id').execute();
await mirror.close();
process.stdout.write(JSON.stringify({ outcomes, rows }));
`;

describe('the client package as a user installs it', { timeout: 120_000 }, () => {
  let dir: string;
  let fake: FakeServer;
  let packed: { files: { path: string }[]; filename: string };
  let skipReason: string | null = null;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'client-pack-'));
    fake = await startFakeServer(['team_a']);
    const out = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
      cwd: CLIENT_DIR,
    });
    packed = JSON.parse(out.stdout)[0];
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{"name":"consumer","private":true,"type":"module"}\n');
    try {
      // Registry metadata from the cache when it is there; better-sqlite3's compile is skipped (scripts)
      // and the addon the repository's own install built is reused below.
      await run(
        'npm',
        ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', join(dir, packed.filename)],
        { cwd: project },
      );
    } catch (err) {
      const text = String((err as { stderr?: string }).stderr ?? err);
      if (!NETWORK_CODES.test(text)) throw err;
      skipReason = `the npm registry is not reachable and its metadata is not cached: ${text.slice(0, 200)}`;
      return;
    }
    const installed = join(project, 'node_modules/better-sqlite3');
    const version = (p: string) => JSON.parse(readFileSync(join(p, 'package.json'), 'utf8')).version;
    expect(version(installed)).toBe(version(REPO_BETTER_SQLITE));
    mkdirSync(join(installed, 'build/Release'), { recursive: true });
    copyFileSync(
      join(REPO_BETTER_SQLITE, 'build/Release/better_sqlite3.node'),
      join(installed, 'build/Release/better_sqlite3.node'),
    );
  });
  afterAll(async () => {
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('packs only dist/ (JavaScript and type declarations), the bin launcher and package.json', () => {
    const paths = packed.files.map((f) => f.path);
    const others = paths.filter((p) => !p.startsWith('dist/'));
    expect(others.sort()).toEqual(['bin/crm-export-sync.js', 'package.json']);
    for (const entry of ['index', 'cli', 'fault-proxy/index']) {
      expect(paths).toContain(`dist/${entry}.js`);
      expect(paths).toContain(`dist/${entry}.d.ts`);
    }
    expect(paths.some((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'))).toBe(false);
  });

  it('installs into an empty project, imports from plain JavaScript and syncs a page through it', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const project = join(dir, 'project');
    const pkg = JSON.parse(readFileSync(join(project, 'node_modules/@crm-export/client/package.json'), 'utf8'));
    expect(pkg.exports['.'].types).toBe('./dist/index.d.ts');
    expect(existsSync(join(project, 'node_modules/@crm-export/client/dist/index.d.ts'))).toBe(true);
    expect(existsSync(join(project, 'node_modules/tsx'))).toBe(false);

    fake.put('team_a', 'lead', leadObject('lead_1'));
    fake.put('team_a', 'lead', leadObject('lead_2'));
    writeFileSync(join(project, 'consumer.mjs'), CONSUMER);
    const out = await run(process.execPath, ['consumer.mjs', fake.url, fake.key, join(dir, 'mirror.db')], {
      cwd: project,
    });
    const result = JSON.parse(out.stdout);
    expect(result.outcomes).toEqual({ team_a: 'caught_up' });
    expect(result.rows).toEqual([
      { team: 'team_a', kind: 'lead', id: 'lead_1', version: 1 },
      { team: 'team_a', kind: 'lead', id: 'lead_2', version: 1 },
    ]);
  });

  it('installs the crm-export-sync command, which runs the compiled build', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const bin = join(dir, 'project/node_modules/.bin/crm-export-sync');
    const out = await run(bin, ['--help'], { cwd: dirname(bin) });
    expect(out.stdout).toContain('sync');
  });
});
