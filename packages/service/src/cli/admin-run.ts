import type { Command } from 'commander';
import { AdminError } from '../access/admin-error.js';
import type { Store } from '../store/store.js';

// Shared plumbing of the `crm-export admin` commands: `--db` / `--json` on every one, one way to open the
// store, print a result and report a refusal.

export type OpenStore = (dbUrl?: string) => Promise<{ store: Store; close(): Promise<void> } | Store>;

export interface CommonOptions {
  db?: string;
  json?: boolean;
}

/** Adds `--db URL` and `--json` to a command. */
export function common(command: Command): Command {
  return command
    .option('--db <url>', 'database URL (default: DATABASE_URL or the local SQLite file)')
    .option('--json', 'print JSON');
}

/**
 * Opens the store, runs `fn`, prints its result (JSON with `--json`, else `human(result)`) and closes the store.
 * An `AdminError` is printed (as `{ error: { code, message } }` with `--json`) and sets exit code 1.
 */
export async function run<T>(
  open: OpenStore,
  options: CommonOptions,
  fn: (store: Store) => Promise<T>,
  human: (result: T) => string,
): Promise<void> {
  const opened = await open(options.db);
  const store = 'backend' in opened ? opened : opened.store;
  try {
    const result = await fn(store);
    process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : `${human(result)}\n`);
  } catch (error) {
    if (!(error instanceof AdminError)) throw error;
    if (options.json)
      process.stdout.write(`${JSON.stringify({ error: { code: error.code, message: error.message } })}\n`);
    process.stderr.write(`crm-export admin: ${error.message}\n`);
    process.exitCode = 1;
  } finally {
    await ('backend' in opened ? opened.close() : opened.close());
  }
}

/** Rows of text columns, aligned. */
export function table(rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '(none)';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** Parses `yes|no|true|false` for commands that set a flag. */
export function parseFlag(value: string): boolean {
  if (['yes', 'true', 'on', '1'].includes(value)) return true;
  if (['no', 'false', 'off', '0'].includes(value)) return false;
  throw new AdminError('invalid_argument', `expected yes or no, got ${value}`);
}
