import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// One writer: stored state changes only through write/ (the CRM's events and the command table of
// write/commands/commands.ts) and store/ itself. The service's sources are read with the TypeScript checker, so a
// call is found by what it calls (a member declared by `Store` or `WriteTx` in store/store.ts), whatever
// the variable is named, and `process.stdout.write` is not mistaken for one.

const SERVICE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const STORE_FILE = join(SERVICE, 'src/store/store.ts');
/** The store's members that change stored state. */
const WRITE_MEMBERS = new Set([
  'write',
  'setMeta',
  'appendAudit',
  'trimFeed',
  'trimIntakeIds',
  'appendUsage',
  'trimUsage',
  'claimIdempotency',
  'finishIdempotency',
  'releaseIdempotency',
  'trimIdempotency',
]);
/** Folders allowed to use them. */
const WRITERS = ['src/write/', 'src/store/'];
/** What write/ may import: the layers below it (never access/, feed/, http/, cli/, metrics/, demo/, ingest/). */
const BELOW_WRITE = [
  'src/write/',
  'src/schemas/',
  'src/store/store.ts',
  'src/errors/',
  'src/settings/',
  'src/limits.ts',
  'src/service-names.ts',
  'src/clock.ts',
  'src/ids.ts',
];

function program(): ts.Program {
  const configPath = join(SERVICE, 'tsconfig.build.json');
  const config = ts.readConfigFile(configPath, (path) => readFileSync(path, 'utf8'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, SERVICE);
  return ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true } });
}

/** Every use of a state-changing store member in the service's sources: `file:line member`. */
function storeWrites(p: ts.Program): { file: string; use: string }[] {
  const checker = p.getTypeChecker();
  const found: { file: string; use: string }[] = [];
  for (const source of p.getSourceFiles()) {
    const file = relative(SERVICE, source.fileName);
    if (!file.startsWith('src/')) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAccessExpression(node) && WRITE_MEMBERS.has(node.name.text)) {
        const symbol = checker.getSymbolAtLocation(node.name);
        if (symbol?.declarations?.some((d) => d.getSourceFile().fileName === STORE_FILE)) {
          const line = source.getLineAndCharacterOfPosition(node.name.getStart()).line + 1;
          found.push({ file, use: `${file}:${line} ${node.name.text}` });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('one writer of stored state', () => {
  const p = program();
  const uses = storeWrites(p);

  it('finds the store writes of the write side itself (the scan sees calls, whatever the receiver is named)', () => {
    expect(uses.some((u) => u.file === 'src/write/commands/commands.ts')).toBe(true);
    expect(uses.some((u) => u.file === 'src/write/events/crm.ts')).toBe(true);
  });

  it('no file outside write/ and store/ calls store.write, setMeta, appendAudit or trimFeed', () => {
    const outside = uses.filter((u) => !WRITERS.some((w) => u.file.startsWith(w)));
    expect(outside.map((u) => u.use)).toEqual([]);
  });

  it('write/ imports only the layers below it (schemas, store, errors, settings, limits, service names, clock, ids)', () => {
    const wrong = writeImports(p).filter(({ to }) => !BELOW_WRITE.some((allowed) => to.startsWith(allowed)));
    expect(wrong.map(({ from, to }) => `${from} -> ${to}`)).toEqual([]);
  });

  it("write/events/ never imports write/commands/: commands may use the events' projections, never the reverse", () => {
    const wrong = writeImports(p).filter(
      ({ from, to }) => from.startsWith('src/write/events/') && to.startsWith('src/write/commands/'),
    );
    expect(wrong.map(({ from, to }) => `${from} -> ${to}`)).toEqual([]);
    // The scan sees imports across the two sides (commands do import events).
    expect(
      writeImports(p).some(
        ({ from, to }) => from.startsWith('src/write/commands/') && to.startsWith('src/write/events/'),
      ),
    ).toBe(true);
  });
});

/** Every relative import of a file under src/write/, as paths from the package root. */
function writeImports(p: ts.Program): { from: string; to: string }[] {
  const found: { from: string; to: string }[] = [];
  for (const source of p.getSourceFiles()) {
    const file = relative(SERVICE, source.fileName);
    if (!file.startsWith('src/write/')) continue;
    for (const statement of source.statements) {
      const specifier =
        (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
        statement.moduleSpecifier &&
        ts.isStringLiteral(statement.moduleSpecifier)
          ? statement.moduleSpecifier.text
          : undefined;
      if (!specifier?.startsWith('.')) continue;
      found.push({
        from: file,
        to: relative(SERVICE, resolve(dirname(source.fileName), specifier)).replace(/\.js$/, '.ts'),
      });
    }
  }
  return found;
}
