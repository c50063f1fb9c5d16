import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The backend boundary (docs/architecture.md, "The store"): a database driver is imported only by its own
// backend folder, a backend folder only by store/open-store.ts, and both backend folders hold the same
// files. Tests and benchmarks may reach past the boundary where the exceptions below say why.

const SERVICE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FOLDERS = ['src', 'test', 'bench', 'scripts'];

/** Each driver and the one folder of src/ that imports it. */
const DRIVERS: Record<string, string> = { 'better-sqlite3': 'src/store/sqlite/', pg: 'src/store/postgres/' };
const BACKEND_FOLDERS = Object.values(DRIVERS);
/** The one file outside the backend folders that picks a backend. */
const OPENER = 'src/store/open-store.ts';

/** Files (or folders, ending in `/`) outside the backend folders that import a driver, and why. */
const DRIVER_EXCEPTIONS: Record<string, string> = {
  'test/support/': 'helpers open the database beside the store: read a SQLite file, create and drop a test schema',
  'test/store/': "the store's own tests check what a backend wrote, or break its connections, with the driver",
  'test/cli/config-errors.test.ts': 'checks that a refused PostgreSQL schema was not created, which no store call can',
  'bench/': 'benchmarks seed databases and time the driver beside the store',
  'src/relay/': "the relay reads the CRM's own outbox table in the CRM's PostgreSQL, not the service's store",
  'test/relay/': 'relay tests play the CRM: they create its outbox table and hold its transactions open',
};

/** Files or folders besides the opener that import a backend folder, and why. */
const BACKEND_EXCEPTIONS: Record<string, string> = {
  'test/': 'tests build a backend with what openStore does not take (a pool size, a schema) or test one backend',
  'bench/': 'benchmarks open each backend with the options they measure',
};

function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : tsFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every module a file names: import, export ... from, import(), import types. Relative ones as paths inside the package. */
function specifiers(path: string): string[] {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const add = (text: string) =>
    found.push(text.startsWith('.') ? relative(SERVICE, resolve(dirname(path), text)).replace(/\.js$/, '.ts') : text);
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteral(argument)) add(argument.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      // `typeof import('...')`: the benchmarks load dist/ and take its types from src/ this way.
      const literal = node.argument.literal;
      if (ts.isStringLiteral(literal)) add(literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const files = FOLDERS.flatMap((folder) => tsFiles(join(SERVICE, folder))).map((path) => ({
  file: relative(SERVICE, path),
  imports: specifiers(path),
}));

const driverOf = (specifier: string) =>
  Object.keys(DRIVERS).find((d) => specifier === d || specifier.startsWith(`${d}/`));
const excepted = (file: string, exceptions: Record<string, string>) =>
  Object.keys(exceptions).some((place) => (place.endsWith('/') ? file.startsWith(place) : file === place));

describe('the store backend boundary', () => {
  it('finds each driver imported in its backend folder (the scan sees the imports)', () => {
    for (const [driver, folder] of Object.entries(DRIVERS)) {
      expect(files.some((f) => f.file.startsWith(folder) && f.imports.some((s) => driverOf(s) === driver))).toBe(true);
    }
  });

  it('only store/<backend>/ imports a database driver, and only its own', () => {
    const wrong = files.flatMap(({ file, imports }) =>
      imports
        .filter((s) => {
          const driver = driverOf(s);
          return driver !== undefined && !file.startsWith(DRIVERS[driver] as string);
        })
        .filter(() => !excepted(file, DRIVER_EXCEPTIONS))
        .map((s) => `${file} imports ${s}`),
    );
    expect(wrong).toEqual([]);
  });

  it('only store/open-store.ts imports a backend folder (besides the folder itself)', () => {
    const wrong = files.flatMap(({ file, imports }) =>
      imports
        .filter((s) => BACKEND_FOLDERS.some((folder) => s.startsWith(folder) && !file.startsWith(folder)))
        .filter(() => file !== OPENER && !excepted(file, BACKEND_EXCEPTIONS))
        .map((s) => `${file} imports ${s}`),
    );
    expect(wrong).toEqual([]);
  });

  it('every exception names a place that still reaches past the boundary', () => {
    const reaches = (place: string, test: (s: string, file: string) => boolean) =>
      files.some(({ file, imports }) => excepted(file, { [place]: '' }) && imports.some((s) => test(s, file)));
    const stale = [
      ...Object.keys(DRIVER_EXCEPTIONS).filter((place) => !reaches(place, (s) => driverOf(s) !== undefined)),
      ...Object.keys(BACKEND_EXCEPTIONS).filter(
        (place) => !reaches(place, (s) => BACKEND_FOLDERS.some((folder) => s.startsWith(folder))),
      ),
    ];
    expect(stale).toEqual([]);
  });

  it('each backend folder holds the same files, each named after its backend', () => {
    const names = (folder: string) => {
      const backend = folder.split('/').at(-2) as string;
      return readdirSync(join(SERVICE, folder))
        .map((name) => (name.startsWith(`${backend}-`) ? name.slice(backend.length + 1) : `(unprefixed) ${name}`))
        .sort();
    };
    const [first, ...others] = BACKEND_FOLDERS.map(names);
    expect(first?.length).toBeGreaterThan(1);
    for (const other of others) expect(other).toEqual(first);
  });
});
