import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { REPO_ROOT } from './cli.js';

// The example outputs of README.md and docs/*.md as the tests that run them read them: fenced blocks and
// code spans found by a marker, so an example that changes shape fails its test instead of drifting.

/** The text of a document of the repository (`README.md`, `docs/ingest.md`...). */
export const docText = (file: string): string => readFileSync(join(REPO_ROOT, file), 'utf8');

/** The one fenced block of `file` that holds `marker`, without its fences. */
export function docBlock(file: string, marker: string): string {
  const blocks = [...docText(file).matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
  const found = blocks.filter((block) => block.includes(marker));
  expect(found, `${file}: one block holding ${marker}`).toHaveLength(1);
  return found[0] as string;
}

/** The one code span of `file`'s prose that holds `marker`, without its backticks (a line break read as a space). */
export function docSpan(file: string, marker: string): string {
  const prose = docText(file).replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  const found = [...prose.matchAll(/`([^`]+)`/g)]
    .map((m) => (m[1] as string).replace(/\s*\n\s*/g, ' '))
    .filter((s) => s.includes(marker));
  expect(found, `${file}: one code span holding ${marker}`).toHaveLength(1);
  return found[0] as string;
}

/** The text after `# ` on the line of `block` that starts with `command` (an example's output). */
export function commentOf(block: string, command: string): string {
  const lines = block.split('\n');
  const at = lines.findIndex((line) => line.startsWith(command));
  expect(at, command).toBeGreaterThan(-1);
  const inline = /\s#\s(.*)$/.exec(lines[at] as string);
  if (inline) return inline[1] as string;
  return (lines[at + 1] as string).replace(/^# /, '');
}

/**
 * An example as a pattern of the whole text: `...` stands for any text, `N` (a word of its own) for a
 * number; everything else is literal.
 */
export function examplePattern(example: string): RegExp {
  const literal = example.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${literal.replaceAll('\\.\\.\\.', '[\\s\\S]*?').replace(/\bN\b/g, '\\d+')}$`);
}
