import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// better-sqlite3 12 aborts Node 24 (`Assertion failed: (env) != nullptr`) when one of its Statement or
// Database objects is garbage-collected. The mirror must keep every handle it made referenced, also after
// it is closed. A child process with `--expose-gc` opens and closes mirrors, then forces collection: on
// Node 24 a dropped handle kills it; on Node 20 the test still proves the round trip works.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-mirror-gc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the SQLite mirror and garbage collection', () => {
  it('a mirror opened, used and closed leaves no handle to be collected: the process survives forced gc', () => {
    const openMirror = fileURLToPath(new URL('../src/sync/open-mirror.ts', import.meta.url));
    const script = `
      const { openMirror } = await import(${JSON.stringify(openMirror)});
      for (let i = 0; i < 20; i++) {
        const mirror = await openMirror(${JSON.stringify(`sqlite:${join(dir, 'mirror')}`)} + i + '.db');
        await mirror.close();
      }
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 100));
      globalThis.gc();
      process.stdout.write('survived');
    `;
    const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).not.toContain('Assertion failed');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('survived');
  });
});
