import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Where a reader following a request finds each step of the HTTP pipeline: a file says what it holds.

const HTTP = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/http');

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
});
