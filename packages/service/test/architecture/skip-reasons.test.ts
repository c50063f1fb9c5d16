import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A suite skipped without a word looks like a pass: a run on a machine without PostgreSQL, Redis or a
// browser would report green and hide what it never ran. Every conditional skip names its reason in the
// test's own title ("... (skipped: set PG_URL)"), or passes it to `context.skip(reason)`.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const TEST_DIRS = ['packages/service/test', 'packages/client/test'];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every conditional skip in `source`, with the text that follows it up to its callback. */
function skips(source: string): { line: number; call: string; title: string }[] {
  const found: { line: number; call: string; title: string }[] = [];
  const pattern =
    /\b(?:describe|it|test)\.(?:skipIf|runIf)\([^)]*\)\(|\b(?:describe|it|test)\.skip\(|:\s*describe\.skip\b/g;
  for (const match of source.matchAll(pattern)) {
    const at = match.index ?? 0;
    const rest = source.slice(at + match[0].length, at + match[0].length + 400);
    // The title is what runs up to the callback (`() =>` or `async () =>`), options included.
    const title = rest.split(/(?:async\s*)?\(\)\s*=>/)[0] ?? rest;
    found.push({ line: source.slice(0, at).split('\n').length, call: match[0], title });
  }
  return found;
}

describe('every skip says why', () => {
  it("each conditional skip in the tests names its reason in the test's output", () => {
    const silent: string[] = [];
    for (const dir of TEST_DIRS) {
      for (const file of testFiles(join(ROOT, dir))) {
        for (const skip of skips(readFileSync(file, 'utf8'))) {
          // A title built elsewhere (a variable) is checked where it is made: `title(...)`, `pgTitle`.
          const named = /skipped|title\(|Title\b/i.test(skip.title);
          if (!named) silent.push(`${relative(ROOT, file)}:${skip.line} ${skip.call}`);
        }
      }
    }
    expect(silent).toEqual([]);
  });

  it('finds a skip that says nothing, so the check above can fail', () => {
    // Spelled in parts, so that this file's own text holds no silent skip.
    const [d, s] = ['describe', 'skip'];
    const source = `${d}.${s}If(!PG_URL)('PostgreSQL things', () => {});\nconst x = ok ? ${d} : ${d}.${s};`;
    expect(skips(source).map((s) => s.title.includes('skipped:'))).toEqual([false, false]);
  });
});
