import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_DOC_PATH, withGeneratedTables } from '../../src/settings/config-doc.js';
import { SETTINGS, type Setting } from '../../src/settings/settings.js';
import { REPO_ROOT } from './cli.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

const variables = (Object.values(SETTINGS) as Setting[]).flatMap((s) => (s.env ? [s.env] : []));

describe('configuration is one schema, and documented from it', () => {
  it('no file of the service reads process.env except those of src/settings/', () => {
    const readers = sources(join(REPO_ROOT, 'packages/service/src'))
      .filter((file) => !file.includes('/src/settings/'))
      .filter((file) => /process\.env\b(?!\s*[,)])/.test(readFileSync(file, 'utf8')));
    expect(readers).toEqual([]);
  });

  it('the README configuration table names every environment variable of the schema', () => {
    const readme = read('README.md');
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Calling the API'));
    expect(variables.filter((name) => !table.includes(`\`${name}\``))).toEqual([]);
    expect(variables.length).toBeGreaterThanOrEqual(8);
  });

  it('the tables of docs/configuration.md are the ones the schema generates (run scripts/generate-config-doc.ts)', () => {
    const doc = read(CONFIG_DOC_PATH);
    expect(doc).toBe(withGeneratedTables(doc));
    for (const name of variables) expect(doc).toContain(`| \`${name}\` |`);
  });
});
