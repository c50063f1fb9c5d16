import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';

// The console's pages are Eta templates (packages/service/console/views/). Eta escapes every `<%= %>` for
// HTML; on top of that every value is filtered so that control characters show as escapes (`\x1b`), the
// way `admin` prints them: a name from the CRM is text, never markup and never a terminal sequence.
// Templates and assets sit beside src/ and dist/ alike, so one path serves both.

const PACKAGE_DIR = new URL('../../console/', import.meta.url);
const VIEWS_DIR = fileURLToPath(new URL('views/', PACKAGE_DIR));

/** C0 and C1 controls, the line and paragraph separators, and the bidirectional controls. */
const CONTROLS = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/** A value as the console shows it: control characters written as escapes (line breaks kept). */
export function visible(value: unknown): string {
  return String(value ?? '').replace(CONTROLS, (char) => {
    if (char === '\n') return char;
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

const eta = new Eta({ views: VIEWS_DIR, cache: true, autoEscape: true, autoFilter: true, filterFunction: visible });

/** Renders page `name` with `data`. */
export function renderView(name: string, data: Record<string, unknown>): string {
  return eta.render(`./${name}`, data);
}

/** JSON for a `<script type="application/json">` element: no text of it can end the element. */
export function jsonData(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

const require = createRequire(import.meta.url);

/** The files the pages load, by the name they are served under: the console's own and uPlot's. */
const ASSET_FILES: Record<string, { file: string; type: string }> = {
  'console.css': { file: fileURLToPath(new URL('assets/console.css', PACKAGE_DIR)), type: 'text/css' },
  'console.js': { file: fileURLToPath(new URL('assets/console.js', PACKAGE_DIR)), type: 'text/javascript' },
  'usage-chart.js': { file: fileURLToPath(new URL('assets/usage-chart.js', PACKAGE_DIR)), type: 'text/javascript' },
  'uplot.js': { file: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript' },
  'uplot.css': { file: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css' },
};

const loaded = new Map<string, { body: Buffer; type: string }>();

/** An asset's bytes and content type (read once), or undefined when there is none of that name. */
export function asset(name: string): { body: Buffer; type: string } | undefined {
  const known = ASSET_FILES[name];
  if (!known) return undefined;
  let entry = loaded.get(name);
  if (!entry) {
    entry = { body: readFileSync(known.file), type: `${known.type}; charset=utf-8` };
    loaded.set(name, entry);
  }
  return entry;
}
