import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Where a reader following a request finds each step of the HTTP pipeline: a file says what it holds.

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const HTTP = join(SRC, 'http');

/** The names a source file exports (functions, classes, constants, types). */
function exportsOf(path: string): string[] {
  const source = readFileSync(path, 'utf8');
  return [...source.matchAll(/^export (?:async )?(?:function|class|const|type|interface) (\w+)/gm)].map((m) => m[1]!);
}

describe('the files of http/', () => {
  it('the firewall, the access hook and the error handler each live in a file named after its one export', () => {
    const files = {
      firewall: 'firewall.ts',
      accessHook: 'access-hook.ts',
      lockAwareErrorHandler: 'lock-aware-error-handler.ts',
    };
    for (const [name, file] of Object.entries(files)) {
      const path = join(HTTP, file);
      expect(existsSync(path), file).toBe(true);
      expect(exportsOf(path), file).toEqual([name]);
    }
  });

  it("one file declares every field the app adds to Fastify's types, and gives each request field its start", () => {
    const sources = (readdirSync(SRC, { recursive: true }) as string[]).filter((file) => file.endsWith('.ts'));
    const declaring = sources.filter((file) =>
      readFileSync(join(SRC, file), 'utf8').includes("declare module 'fastify'"),
    );
    expect(declaring).toEqual([join('http', 'request-fields.ts')]);
    const source = readFileSync(join(HTTP, 'request-fields.ts'), 'utf8');
    const block = /interface FastifyRequest \{([^}]*)\}/.exec(source)?.[1] ?? '';
    const fields = [...block.matchAll(/^\s+(\w+): /gm)].map((m) => m[1]);
    const started = [...source.matchAll(/decorateRequest\('(\w+)'/g)].map((m) => m[1]);
    expect(fields.length).toBe(10);
    expect(started).toEqual(fields);
  });

  it('the team gate, a step of the HTTP pipeline, lives in http/ and feed/ keeps only what capture is', () => {
    expect(exportsOf(join(HTTP, 'team-gate.ts'))).toEqual(['WhileUncaptured', 'TeamGate', 'teamGate']);
    const feed = (readdirSync(join(SRC, 'feed')) as string[]).filter((file) => file.endsWith('.ts'));
    expect(feed.flatMap((file) => exportsOf(join(SRC, 'feed', file))).filter((name) => /gate/i.test(name))).toEqual([]);
  });
});
