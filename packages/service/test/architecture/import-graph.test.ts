import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The import graph of each workspace package, read with the TypeScript parser the project already has:
// no import circle (type-only imports included, since they tie the files together just the same), and no
// dead file, that is one nothing imports or starts and that is no entry point of the package.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const PACKAGES = ['packages/service', 'packages/client'];
const FOLDERS = ['src', 'test', 'bench', 'scripts'];

interface PackageGraph {
  /** Every TypeScript file of the package, relative to the package. */
  files: string[];
  /** What each file imports (import, export ... from, import()). */
  imports: Map<string, Set<string>>;
  /** Files another file starts as a process or script by path (a string literal naming the file). */
  started: Set<string>;
  /** Entry points: the package's exports and commands, its npm scripts, scripts/ and the test files. */
  entries: Set<string>;
}

function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : tsFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The TypeScript file a specifier written as in the sources (`./x.js`, `../y.ts`) names, if it exists. */
function target(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const path = resolve(dirname(from), specifier).replace(/\.js$/, '.ts');
  return path.endsWith('.ts') && existsSync(path) ? path : undefined;
}

function readGraph(pkg: string): PackageGraph {
  const dir = join(ROOT, pkg);
  const paths = FOLDERS.flatMap((folder) => tsFiles(join(dir, folder)));
  const rel = (path: string) => relative(dir, path);
  const imports = new Map<string, Set<string>>();
  const started = new Set<string>();
  for (const path of paths) {
    const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, false);
    const own = new Set<string>();
    const visit = (node: ts.Node): void => {
      const isImport =
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier !== undefined &&
        ts.isStringLiteral(node.moduleSpecifier);
      if (isImport) {
        const file = target(path, (node.moduleSpecifier as ts.StringLiteral).text);
        if (file) own.add(rel(file));
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const [argument] = node.arguments;
        const file = argument && ts.isStringLiteral(argument) ? target(path, argument.text) : undefined;
        if (file) own.add(rel(file));
      } else if (ts.isStringLiteralLike(node) && node.text.endsWith('.ts')) {
        const file = target(path, node.text.startsWith('.') ? node.text : `./${node.text}`);
        if (file) started.add(rel(file));
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    imports.set(rel(path), own);
  }
  return { files: paths.map(rel), imports, started, entries: entryPoints(dir, paths.map(rel)) };
}

function entryPoints(dir: string, files: string[]): Set<string> {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    exports?: Record<string, Record<string, string>>;
    bin?: Record<string, string>;
    scripts?: Record<string, string>;
  };
  const entries = new Set(files.filter((f) => f.startsWith('scripts/') || f.endsWith('.test.ts')));
  for (const conditions of Object.values(manifest.exports ?? {})) {
    const source = conditions['@crm-export/source'];
    if (source) entries.add(relative('.', source));
  }
  // A command runs the compiled file: dist/<path>.js is src/<path>.ts.
  for (const bin of Object.values(manifest.bin ?? {})) {
    for (const [, path] of readFileSync(join(dir, bin), 'utf8').matchAll(/dist\/([\w/.-]+)\.js/g)) {
      entries.add(`src/${path}.ts`);
    }
  }
  for (const script of Object.values(manifest.scripts ?? {})) {
    for (const word of script.split(/\s+/)) if (word.endsWith('.ts')) entries.add(word);
  }
  return entries;
}

/** Groups of files that import one another, directly or around a circle (Tarjan's strongly connected components). */
function circles(imports: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of imports.get(file) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1 || imports.get(file)?.has(file)) found.push(group.sort());
  };
  for (const file of imports.keys()) if (!index.has(file)) connect(file);
  return found;
}

for (const pkg of PACKAGES) {
  describe(`import graph of ${pkg}`, () => {
    const graph = readGraph(pkg);

    it('reads the package: its source files and the imports between them', () => {
      expect(graph.files.filter((f) => f.startsWith('src/')).length).toBeGreaterThan(10);
      expect([...graph.imports.values()].some((targets) => targets.size > 0)).toBe(true);
    });

    it('has no import circle (a shared piece moves down instead)', () => {
      expect(circles(graph.imports).map((group) => group.join(' + '))).toEqual([]);
    });

    it('has no dead file: each is imported, started by path or an entry point', () => {
      const used = new Set([...graph.entries, ...graph.started, ...[...graph.imports.values()].flatMap((t) => [...t])]);
      expect(graph.files.filter((file) => !used.has(file))).toEqual([]);
    });
  });
}

// The service's top-level folders and files as layers, top first: an import may only point down, to a
// lower layer, or stay inside its own folder. Two places on one line are side by side and import neither
// way. A new folder takes its place here (the test fails until it has one).
const SERVICE_LAYERS: readonly (readonly string[])[] = [
  ['cli'],
  ['relay'],
  ['server.ts'],
  ['internal'],
  ['console'],
  ['operator-listener.ts'],
  ['manage'],
  ['http'],
  ['metrics', 'feed', 'usage'],
  ['cursor-codec.ts', 'list-envelope.ts'],
  ['access'],
  ['settings'],
  ['demo', 'ingest'],
  ['write'],
  ['store'],
  ['ids.ts'],
  ['schemas', 'clock.ts', 'limits.ts', 'service-names.ts', 'errors'],
];

/** The top-level folder or file of `src/` a source file belongs to. */
const placeOf = (file: string) => file.slice('src/'.length).split('/')[0] as string;

describe('layers of packages/service/src', () => {
  const graph = readGraph('packages/service');
  const layer = new Map(SERVICE_LAYERS.flatMap((places, depth) => places.map((place) => [place, depth] as const)));
  const sources = graph.files.filter((file) => file.startsWith('src/'));

  it('names every top-level folder and file of src/ in exactly one layer', () => {
    const places = [...new Set(sources.map(placeOf))].sort();
    expect(places.filter((place) => !layer.has(place))).toEqual([]);
    expect(SERVICE_LAYERS.flat().length).toBe(layer.size);
  });

  it('every import points down: to a lower layer or within its own folder', () => {
    const upward: string[] = [];
    for (const file of sources) {
      for (const imported of graph.imports.get(file) ?? []) {
        if (!imported.startsWith('src/')) continue;
        const [from, to] = [placeOf(file), placeOf(imported)];
        if (from !== to && (layer.get(to) ?? -1) <= (layer.get(from) ?? -1)) upward.push(`${file} -> ${imported}`);
      }
    }
    expect(upward).toEqual([]);
  });
});
