import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/config.js';
import { REPO_ROOT } from './cli.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Environment variables the service's code reads: `process.env.X`, `env.X` and `X_ENV = 'X'` constants. */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  for (const file of sources(join(REPO_ROOT, 'packages/service/src'))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)|_ENV = '([A-Z][A-Z0-9_]+)'/g)) {
      names.add((match[1] ?? match[2])!);
    }
  }
  // Set by npm itself, not by an operator (documented in docs/configuration.md).
  names.delete('INIT_CWD');
  return names;
}

describe('configuration is documented', () => {
  it('the README configuration table names every environment variable the service reads', () => {
    const readme = read('README.md');
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Calling the API'));
    const missing = [...variablesRead()].filter((name) => !table.includes(`\`${name}\``));
    expect(missing).toEqual([]);
    expect(variablesRead().size).toBeGreaterThanOrEqual(5);
  });

  it('docs/configuration.md lists every limit with its default', () => {
    const doc = read('docs/configuration.md');
    for (const [name, value] of Object.entries(DEFAULT_LIMITS)) {
      expect(doc).toContain(`| \`${name}\` | ${value}`);
    }
  });
});
