import type { WriteTx } from '../../store/store.js';
import {
  CURSOR_SECRET_META_KEY,
  type CursorRefusal,
  FEED_EPOCH_META_KEY,
  INITIAL_FEED_EPOCH,
  PEPPER_META_KEY,
  parseEndpointList,
  parseSandboxIntegration,
  parseSandboxTeam,
  type SandboxIntegrationState,
  type SandboxTeamState,
  START_META_KEY,
  SWITCH_KEYS,
  sandboxIntegrationKey,
  sandboxTeamKey,
} from './meta-state.js';

// Commands on the meta table (entries of write/commands/commands.ts). Random values (secrets, tokens) are drawn by
// the caller before the transaction, so a retried transaction writes the same value it would have the
// first time; a command that must differ from what is stored gets two candidates and takes the first
// that does.

/** The first of two distinct candidates that differs from `current`. */
function other(candidates: readonly [string, string], current: string | undefined): string {
  return candidates[0] === current ? candidates[1] : candidates[0];
}

/** The stored value of a secret, storing `fresh` when there is none yet (processes agree on the first). */
async function ensureSecret(tx: WriteTx, key: string, fresh: string): Promise<string> {
  const existing = await tx.getMeta(key);
  if (existing) return existing;
  await tx.setMeta(key, fresh);
  return fresh;
}

export const ensurePepper = (tx: WriteTx, input: { fresh: string }): Promise<string> =>
  ensureSecret(tx, PEPPER_META_KEY, input.fresh);

export const ensureCursorSecret = (tx: WriteTx, input: { fresh: string }): Promise<string> =>
  ensureSecret(tx, CURSOR_SECRET_META_KEY, input.fresh);

export async function setApiDisabled(tx: WriteTx, input: { disabled: boolean }): Promise<void> {
  await tx.setMeta(SWITCH_KEYS.apiDisabled, input.disabled ? 'true' : 'false');
}

/** Switches one endpoint (a name the caller checked) off or back on for every team. */
export async function setCapabilityDisabled(
  tx: WriteTx,
  input: { endpoint: string; disabled: boolean },
): Promise<void> {
  const current = parseEndpointList(await tx.getMeta(SWITCH_KEYS.capabilityDisabled)).filter(
    (e) => e !== input.endpoint,
  );
  if (input.disabled) current.push(input.endpoint);
  await tx.setMeta(SWITCH_KEYS.capabilityDisabled, JSON.stringify(current));
}

/** One change of an example team's sandbox state. */
export type SandboxTeamChange =
  /** Every cursor issued so far gets `refusal`: a new token, the first candidate unlike the current one. */
  | { change: 'cursors'; refusal: CursorRefusal; tokens: [string, string] }
  | { change: 'not_ready'; until: number }
  | { change: 'capability'; endpoint: string; off: boolean }
  /** Ends every timed fault and capability switch; cursor refusals stay. */
  | { change: 'clear' };

function nextTeamState(s: SandboxTeamState, c: SandboxTeamChange): SandboxTeamState {
  switch (c.change) {
    case 'cursors':
      return { ...s, cursors: { token: other(c.tokens, s.cursors?.token), refusal: c.refusal } };
    case 'not_ready':
      return { ...s, notReadyUntil: c.until };
    case 'capability': {
      const list = (s.capabilitiesOff ?? []).filter((e) => e !== c.endpoint);
      if (c.off) list.push(c.endpoint);
      return { ...s, capabilitiesOff: list };
    }
    case 'clear':
      return s.cursors ? { cursors: s.cursors } : {};
  }
}

export async function changeSandboxTeam(
  tx: WriteTx,
  input: { team: string } & SandboxTeamChange,
): Promise<SandboxTeamState> {
  const next = nextTeamState(parseSandboxTeam(await tx.getMeta(sandboxTeamKey(input.team))), input);
  await tx.setMeta(sandboxTeamKey(input.team), JSON.stringify(next));
  return next;
}

/** Sets one timed fault of an example integration (epoch ms it lasts until). */
export async function changeSandboxIntegration(
  tx: WriteTx,
  input: { integration: string; fault: keyof SandboxIntegrationState; until: number },
): Promise<SandboxIntegrationState> {
  const current = parseSandboxIntegration(await tx.getMeta(sandboxIntegrationKey(input.integration)));
  const next = { ...current, [input.fault]: input.until };
  await tx.setMeta(sandboxIntegrationKey(input.integration), JSON.stringify(next));
  return next;
}

/** Ends every fault of these integrations. */
export async function clearSandboxIntegrations(tx: WriteTx, input: { integrations: string[] }): Promise<void> {
  for (const id of input.integrations) await tx.setMeta(sandboxIntegrationKey(id), '{}');
}

/**
 * Records that the database was restored from a backup: a new feed epoch, the first candidate unlike the
 * current one (docs/feed.md). Returns the previous epoch and the new one.
 */
export async function markRestore(
  tx: WriteTx,
  input: { tokens: [string, string] },
): Promise<{ previous: string; epoch: string }> {
  const previous = (await tx.getMeta(FEED_EPOCH_META_KEY)) ?? INITIAL_FEED_EPOCH;
  const epoch = other(input.tokens, previous);
  await tx.setMeta(FEED_EPOCH_META_KEY, epoch);
  return { previous, epoch };
}

/** What the first `crm-export start` created (ids and the key's last four characters only). */
export async function recordStart(tx: WriteTx, input: { record: object }): Promise<void> {
  await tx.setMeta(START_META_KEY, JSON.stringify(input.record));
}
