import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

// better-sqlite3 12 aborts Node 24 (`Assertion failed: (env) != nullptr`) when one of its native objects
// (Database, Statement, Backup) is garbage-collected. The SQLite store keeps every handle it makes
// referenced, also after close. A child process with `--expose-gc` runs stores through migrations, writes,
// reads and a backup, closes them and forces collection: on Node 24 a dropped handle kills it. Everything
// else that opens a SQLite file goes through one of the few modules below that keep their handles too.

const dir = mkdtempSync(join(tmpdir(), 'crm-export-sqlite-gc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the SQLite store and garbage collection', () => {
  it('stores opened, written, read, backed up and closed leave no handle to be collected: the process survives forced gc', () => {
    const storeModule = fileURLToPath(new URL('../../src/store/sqlite/sqlite-store.ts', import.meta.url));
    const script = `
      const { SqliteStore } = await import(${JSON.stringify(storeModule)});
      for (let i = 0; i < 20; i++) {
        const store = new SqliteStore({ path: ${JSON.stringify(join(dir, 'store'))} + i + '.db' });
        await store.migrate();
        await store.write((tx) => tx.setMeta('probe', String(i)));
        if ((await store.getMeta('probe')) !== String(i)) throw new Error('meta not read back');
        await store.backup(${JSON.stringify(join(dir, 'copy'))} + i + '.db');
        await store.close();
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

  it('only the modules that keep their handles referenced load better-sqlite3 (a dropped handle aborts Node 24)', () => {
    const packages = fileURLToPath(new URL('../../../', import.meta.url));
    const keepers = [
      'service/src/store/sqlite/sqlite-connection.ts',
      'service/test/support/sqlite-file.ts',
      'client/src/sync/open-mirror.ts',
      'client/test/support/sqlite-inspect.ts',
    ];
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return ['node_modules', 'dist', '.bench'].includes(entry.name) ? [] : files(path);
        return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
      });
    const loaders = files(packages).filter((path) => {
      const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, false);
      let loads = false;
      const visit = (node: ts.Node): void => {
        const named = (n: ts.Node | undefined) =>
          n !== undefined && ts.isStringLiteral(n) && n.text === 'better-sqlite3';
        if (ts.isImportDeclaration(node) && named(node.moduleSpecifier) && !node.importClause?.isTypeOnly) loads = true;
        if (
          ts.isCallExpression(node) &&
          node.expression.kind === ts.SyntaxKind.ImportKeyword &&
          named(node.arguments[0])
        )
          loads = true;
        ts.forEachChild(node, visit);
      };
      visit(source);
      return loads;
    });
    expect(loaders.map((path) => relative(packages, path)).sort()).toEqual([...keepers].sort());
  });
});
