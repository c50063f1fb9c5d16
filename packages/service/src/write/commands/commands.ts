import { randomBytes } from 'node:crypto';
import { base62 } from '../../ids.js';
import type {
  AuditEntry,
  IdempotencyRow,
  Store,
  TrimOptions,
  UsageBatch,
  UsageTrim,
  WriteTx,
} from '../../store/store.js';
import { dropQuarantine, retryQuarantine } from '../intake/quarantine-commands.js';
import {
  changeAllowlist,
  changeTeam,
  createIntegration,
  createOrganization,
  endOldKey,
  revokeIntegration,
  rollKey,
  setHoldsData,
  setOrganizationPlan,
} from './access-commands.js';
import { completeCapture, prepareLeads, requestCapture } from './capture-commands.js';
import { closeConsoleSession, openConsoleSession, touchConsoleSession } from './console-session-commands.js';
import {
  changeSandboxIntegration,
  changeSandboxTeam,
  clearSandboxIntegrations,
  ensureCursorSecret,
  ensurePepper,
  markRestore,
  recordStart,
  setApiDisabled,
  setCapabilityDisabled,
} from './meta-commands.js';
import { createOperatorToken, revokeOperatorToken, touchOperatorToken } from './operator-token-commands.js';
import { markDataStep, republishRecords } from './republish-commands.js';

/**
 * Every change of stored state that is not a CRM event (those go through `Crm.apply`, write/events/crm.ts) is one
 * command of this table, run by `runCommand`; nothing outside write/ and store/ calls the store's write
 * members (test/architecture/one-writer.test.ts keeps it so).
 *
 * A `tx` command runs inside one `Store.write` transaction. PostgreSQL runs the transaction's callback
 * again after a serialization failure or a deadlock, so a command must give the same result when its
 * callback runs twice: it reads and writes only through the transaction it is given, never changes its
 * input or anything outside the transaction, and takes the ids, keys, secrets and times it stores from
 * its input, drawn by the caller before the transaction (test/write/commands/commands.test.ts runs each command
 * through a rolled-back first attempt). An `own` command is a store member that makes its own
 * transactions: the audit trail's insert, and retention's bounded batches, each safe to repeat.
 */
export const COMMANDS = {
  'organization.create': tx(createOrganization),
  'organization.set_plan': tx(setOrganizationPlan),
  'team.change': tx(changeTeam),
  'team.holds_data': tx(setHoldsData),
  'integration.create': tx(createIntegration),
  'integration.revoke': tx(revokeIntegration),
  'integration.allowlist': tx(changeAllowlist),
  'key.roll': tx(rollKey),
  'key.end_old': tx(endOldKey),
  'console_session.open': tx(openConsoleSession),
  'console_session.touch': tx(touchConsoleSession),
  'console_session.close': tx(closeConsoleSession),
  'operator_token.create': tx(createOperatorToken),
  'operator_token.revoke': tx(revokeOperatorToken),
  'operator_token.touch': tx(touchOperatorToken),
  'secret.pepper': tx(ensurePepper),
  'secret.cursor': tx(ensureCursorSecret),
  'switch.api_disabled': tx(setApiDisabled),
  'switch.capability_disabled': tx(setCapabilityDisabled),
  'sandbox.team': tx(changeSandboxTeam),
  'sandbox.integration': tx(changeSandboxIntegration),
  'sandbox.clear_integrations': tx(clearSandboxIntegrations),
  'capture.request': tx(requestCapture),
  'capture.prepare_leads': tx(prepareLeads),
  'capture.complete': tx(completeCapture),
  'feed.mark_restore': tx(markRestore),
  'start.record': tx(recordStart),
  'data.republish': tx(republishRecords),
  'data.step_applied': tx(markDataStep),
  'audit.append': own((store, entry: AuditEntry) => store.appendAudit(entry)),
  // The management API's idempotency keys (manage/api/idempotency.ts): each a single statement, safe to repeat.
  'idempotency.claim': own(
    (store, input: { row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest' | 'createdAt'>; expiredBefore: number }) =>
      store.claimIdempotency(input.row, input.expiredBefore),
  ),
  'idempotency.finish': own((store, row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest' | 'status' | 'answer'>) =>
    store.finishIdempotency(row),
  ),
  'idempotency.release': own((store, row: Pick<IdempotencyRow, 'owner' | 'key' | 'digest'>) =>
    store.releaseIdempotency(row),
  ),
  'idempotency.trim': own((store, input: { before: number }) => store.trimIdempotency(input.before)),
  'feed.trim': own((store, input: RetentionTrim) =>
    store.trimFeed(input.removalsBefore, input.supersededBefore, input),
  ),
  // The intake's quarantine (write/intake/): a retry runs its own transactions, as a batch does.
  'intake.quarantine_drop': tx(dropQuarantine),
  'intake.quarantine_retry': own(retryQuarantine),
  'intake.trim_ids': own((store, input: { before: number }) => store.trimIntakeIds(input.before)),
  // The request log, usage counts and last uses: a process's flush (usage/recorder.ts), and their retention.
  'usage.append': own((store, batch: UsageBatch) => store.appendUsage(batch)),
  'usage.trim': own((store, trim: UsageTrim) => store.trimUsage(trim)),
};

/**
 * Retention once: removal entries recorded before `removalsBefore` (none when null), superseded ones before
 * `supersededBefore` (epoch ms).
 */
export interface RetentionTrim extends TrimOptions {
  removalsBefore: number | null;
  supersededBefore: number;
}

interface TxCommand<I, O> {
  readonly tx: (tx: WriteTx, input: I) => Promise<O>;
}
interface OwnCommand<I, O> {
  readonly own: (store: Store, input: I) => Promise<O>;
}

function tx<I, O>(run: (tx: WriteTx, input: I) => Promise<O>): TxCommand<I, O> {
  return { tx: run };
}
function own<I, O>(run: (store: Store, input: I) => Promise<O>): OwnCommand<I, O> {
  return { own: run };
}

export type CommandName = keyof typeof COMMANDS;
export type CommandInput<N extends CommandName> =
  (typeof COMMANDS)[N] extends TxCommand<infer I, unknown>
    ? I
    : (typeof COMMANDS)[N] extends OwnCommand<infer I, unknown>
      ? I
      : never;
export type CommandOutput<N extends CommandName> =
  (typeof COMMANDS)[N] extends TxCommand<never, infer O>
    ? O
    : (typeof COMMANDS)[N] extends OwnCommand<never, infer O>
      ? O
      : never;

/** Runs one command: a `tx` command in one transaction of its own. */
export function runCommand<N extends CommandName>(
  store: Store,
  name: N,
  input: CommandInput<N>,
): Promise<CommandOutput<N>> {
  // The table's entry for `name` takes `CommandInput<N>` and gives `CommandOutput<N>` (the types are read from it).
  const command = COMMANDS[name] as unknown as
    | TxCommand<CommandInput<N>, CommandOutput<N>>
    | OwnCommand<CommandInput<N>, CommandOutput<N>>;
  return 'tx' in command ? store.write((t) => command.tx(t, input)) : command.own(store, input);
}

/** Two different random tokens of `length` base62 characters: a command takes the first unlike the stored one. */
export function drawTokens(length: number): [string, string] {
  const first = base62(length);
  let second = base62(length);
  while (second === first) second = base62(length);
  return [first, second];
}

/** A fresh 32-byte secret in the given encoding, for a command that stores one when none exists yet. */
export function drawSecret(encoding: 'base64' | 'base64url'): string {
  return randomBytes(32).toString(encoding);
}
