import { userInfo } from 'node:os';
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { iso, systemClock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import type { AnyAction, ManageContext } from '../manage/action.js';
import { recordedLastUse } from '../manage/context.js';
import { perform, recordRefusal } from '../manage/perform.js';
import { readLimits } from '../settings/read-limits.js';
import { settingOption } from '../settings/read-setting.js';
import type { Store } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import { jsonText, printable, terminalText } from './terminal-text.js';

// Shared plumbing of the `crm-export admin` commands: `--db` / `--json` / `--actor` on every one, one way
// to open the store, print a result, report a refusal, record the action in the audit trail and confirm
// an irreversible one.

export type OpenStore = (dbUrl?: string) => Promise<{ store: Store; close(): Promise<void> } | Store>;

export interface CommonOptions {
  db?: string;
  json?: boolean;
  actor?: string;
}

/** Adds `--db URL`, `--json` and `--actor NAME` to a command. */
export function common(command: Command): Command {
  return command
    .addOption(settingOption('db', 'database URL; refused when it does not exist (crm-export migrate creates it)'))
    .option('--json', 'print JSON')
    .option('--actor <name>', 'who runs the command, for the audit trail (default: the operating-system user)');
}

/**
 * How a changing command appears in the audit trail (docs/auth.md, "Audit trail"). Ids and settings only:
 * never a key, a key digest, a secret or personal data.
 */
export interface AuditSpec<T> {
  /** Stable dotted name, e.g. `integration.revoke`. */
  action: string;
  /** Ids known before the action runs. */
  target?: readonly string[];
  details?: Record<string, unknown>;
  /** Ids and details known only once the action succeeded (a generated id, counts); added to the above. */
  fromResult?: (result: T) => { target?: readonly string[]; details?: Record<string, unknown> };
}

/** A name `--actor` accepts. */
const ACTOR = /^(?!\s)[^\p{Cc}]{1,100}$/u;

/** The actor of the audit trail: `--actor`, else the operating-system user. */
export function actorOf(options: CommonOptions): string {
  if (options.actor !== undefined) return options.actor;
  try {
    return userInfo().username;
  } catch {
    // No user name for this uid (a container without a passwd entry).
    return `uid:${process.getuid?.() ?? 'unknown'}`;
  }
}

/**
 * Opens the store, runs `fn`, prints its result (JSON with `--json`, else `human(result)`) and closes the store.
 * An `AdminError` is printed (as `{ error: { code, message } }` with `--json`) and sets exit code 1.
 * With `audit`, the action is recorded right after it ran, its outcome `ok` or the refusal's error code.
 */
export async function run<T>(
  open: OpenStore,
  options: CommonOptions,
  fn: (store: Store) => Promise<T>,
  human: (result: T) => string,
  audit?: AuditSpec<T>,
): Promise<void> {
  const opened = await openChecked(open, options);
  if (!opened) return;
  const { store } = opened;
  try {
    let result: T;
    try {
      result = await fn(store);
    } catch (error) {
      if (audit)
        await record(store, options, audit, error instanceof AdminError ? error.code : 'failed').catch(() => {});
      throw error;
    }
    let recorded = true;
    if (audit) {
      recorded = await record(store, options, audit, 'ok', audit.fromResult?.(result)).then(
        () => true,
        () => false,
      );
    }
    printResult(options, result, () => human(result), recorded);
  } catch (error) {
    if (!(error instanceof AdminError)) throw error;
    refuse(options, error);
  } finally {
    await opened.close();
  }
}

/**
 * The store for a command, opened once `--actor` is checked; undefined when a malformed `--actor` was
 * refused (nothing opened).
 */
async function openChecked(
  open: OpenStore,
  options: CommonOptions,
): Promise<{ store: Store; close: () => Promise<void> } | undefined> {
  if (options.actor !== undefined && !ACTOR.test(options.actor)) {
    refuse(
      options,
      new AdminError(
        'invalid_argument',
        '--actor must be 1 to 100 characters, no control characters, not starting with a space',
      ),
    );
    return undefined;
  }
  const opened = await open(options.db);
  return 'backend' in opened
    ? { store: opened, close: () => opened.close() }
    : { store: opened.store, close: () => opened.close() };
}

/** Prints a result (JSON with `--json`, else `human()`); an action left out of the audit trail sets exit code 1. */
function printResult(options: CommonOptions, result: unknown, human: () => string, recorded: boolean): void {
  process.stdout.write(options.json ? `${jsonText(result, 2)}\n` : `${terminalText(human())}\n`);
  if (!recorded) {
    process.stderr.write('crm-export admin: the change was made but could not be recorded in the audit trail\n');
    process.exitCode = 1;
  }
}

/** How `runAction` builds an action's input and context from the command line. */
export interface ActionCall<T> {
  /** The action's input from the arguments; an `AdminError` here is a refusal, recorded when the action audits. */
  input: () => unknown;
  human: (result: T) => string;
  /** What is printed of the result, as JSON and to `human` (default: the result itself). */
  print?: (result: T) => unknown;
  /** Ids the audit entry of a refusal names when `input` itself refused (the arguments could not be read). */
  target?: readonly string[];
  /** Adds what the action needs beyond the store (lockout counters); `close` runs after it. */
  extend?: (ctx: ManageContext) => Promise<{ ctx: ManageContext; close?: () => void }>;
}

/**
 * Runs one management action (manage/) as the management API does, with the operating-system user (or
 * `--actor`) as its actor: opens the store, prints the result or the refusal as `run` does.
 */
export async function runAction<T>(
  open: OpenStore,
  options: CommonOptions,
  action: AnyAction,
  call: ActionCall<T>,
): Promise<void> {
  const opened = await openChecked(open, options);
  if (!opened) return;
  const { store } = opened;
  const actor = { name: actorOf(options) };
  let close: (() => void) | undefined;
  try {
    let input: unknown;
    try {
      input = call.input();
    } catch (error) {
      if (error instanceof AdminError) await recordRefusal(store, actor, action, call.target ?? [], error.code);
      throw error;
    }
    let ctx: ManageContext = {
      store,
      clock: systemClock,
      limits: readLimits(),
      actor,
      lastUse: recordedLastUse(store),
    };
    if (call.extend) ({ ctx, close } = await call.extend(ctx));
    const { result, recorded } = await perform(ctx, action, input);
    const shown = call.print ? call.print(result as T) : result;
    printResult(options, shown, () => call.human(result as T), recorded);
  } catch (error) {
    if (!(error instanceof AdminError)) throw error;
    refuse(options, error);
  } finally {
    close?.();
    await opened.close();
  }
}

function record<T>(
  store: Store,
  options: CommonOptions,
  audit: AuditSpec<T>,
  outcome: string,
  extra: { target?: readonly string[]; details?: Record<string, unknown> } = {},
): Promise<void> {
  return runCommand(store, 'audit.append', {
    at: iso(systemClock.now()),
    actor: actorOf(options),
    action: audit.action,
    target: [...new Set([...(audit.target ?? []), ...(extra.target ?? [])])],
    outcome,
    details: { ...audit.details, ...extra.details },
  });
}

/** Reports a refusal: `{ error: { code, message } }` with `--json`, the message on standard error, exit code 1. */
export function refuse(options: CommonOptions, error: AdminError): void {
  if (options.json) process.stdout.write(`${jsonText({ error: { code: error.code, message: error.message } })}\n`);
  process.stderr.write(`crm-export admin: ${printable(error.message)}\n`);
  process.exitCode = 1;
}

/** Adds `--yes` to a command that cannot be undone. */
export function yesOption(command: Command): Command {
  return command.option('--yes', 'do it without asking (required when standard input is not a terminal)');
}

/**
 * Runs `action` once the operator confirmed `what` (a sentence saying what happens, e.g. that it cannot be
 * undone): `--yes`, or "yes" typed at the terminal.
 * Without a terminal and without `--yes` it refuses (`confirmation_required`, exit code 1) before
 * opening the database.
 */
export async function confirmed(
  options: CommonOptions & { yes?: boolean },
  what: string,
  action: () => Promise<void>,
  input: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin,
): Promise<void> {
  if (!options.yes) {
    if (!input.isTTY) {
      return refuse(
        options,
        new AdminError('confirmation_required', `${what}: pass --yes to confirm (no terminal to ask)`),
      );
    }
    const prompt = createInterface({ input, output: process.stderr });
    let answer: string;
    try {
      answer = await prompt.question(`${printable(what)}. Type "yes" to continue: `);
    } finally {
      prompt.close();
    }
    if (answer.trim().toLowerCase() !== 'yes')
      return refuse(options, new AdminError('confirmation_required', `${what}: not confirmed, nothing changed`));
  }
  await action();
}

/** Rows of text columns under a header row, aligned; a control character in a cell is shown escaped. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '(none)';
  const all = [header, ...rows.map((row) => row.map(printable))];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
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
