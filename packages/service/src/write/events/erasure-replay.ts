import type { Clock } from '../../clock.js';
import type { RecordKind } from '../../schemas/enums.js';
import type { ErasedRecord, Store } from '../../store/store.js';
import type { ErasedMessageState } from '../types.js';
import { Crm } from './crm.js';
import type { CrmEvent } from './events.js';

// Restoring a backup must not bring back a person erased after the backup was taken (docs/backup-restore.md):
// the erasures recorded by the database being replaced (ids only) are applied again to the restored one.

/**
 * Kinds erased by their own event, in the order they are replayed (a lead's cascade first); the others
 * (activities, facets) go with their lead's erasure. A message is no record: its erasure is kept as an
 * `erased_message` entity, and it is served while its `message` entity counts in its conversation.
 */
const ERASE_EVENTS = {
  lead: (id: string, at: string): CrmEvent => ({ type: 'lead.erased', at, lead: id }),
  call: (id: string, at: string): CrmEvent => ({ type: 'call.erased', at, call: id }),
  conversation: (id: string, at: string): CrmEvent => ({ type: 'conversation.erased', at, conversation: id }),
  message: (id: string, at: string): CrmEvent => ({ type: 'message.erased', at, message: id }),
} as const;

/** One erasure a restore must apply again: a record erased, or a message. */
export interface Erasure extends Omit<ErasedRecord, 'kind'> {
  kind: RecordKind | 'message';
}

/** Every erasure this database holds, oldest first: erased records and erased messages. */
export async function listErasures(store: Pick<Store, 'erasedRecords' | 'findEntities'>): Promise<Erasure[]> {
  const messages = (await store.findEntities<ErasedMessageState>('erased_message', {})).map(
    (e): Erasure => ({ kind: 'message', id: e.id, team: e.team as string, erasedAt: e.state.erasedAt }),
  );
  const all: Erasure[] = [...(await store.erasedRecords()), ...messages];
  return all.sort((a, b) => (a.erasedAt < b.erasedAt ? -1 : a.erasedAt > b.erasedAt ? 1 : 0));
}

/** Whether the store still serves what an erasure names (a message: while it counts in its conversation). */
async function served(store: Store, kind: string, id: string): Promise<boolean> {
  if (kind === 'message') return (await store.getEntity('message', id)) !== undefined;
  const record = await store.getRecord(kind as RecordKind, id);
  return record !== undefined && record.removed === null;
}

export interface ReplayResult {
  /** Records erased again now (each with its cascade). */
  erased: number;
  /** Listed records already removed (in the backup, or by a lead's cascade just now), or never held. */
  unchanged: number;
  /** Listed records still served after the replay: must be empty. */
  stillLive: { kind: string; id: string }[];
}

/** One NDJSON line per erasure: `{"kind","id","team","erased_at"}`. */
export function erasureLine(r: Erasure): string {
  return `${JSON.stringify({ kind: r.kind, id: r.id, team: r.team, erased_at: r.erasedAt })}\n`;
}

/** Parses the lines `erasureLine` writes; throws on anything else, naming the line. */
export function parseErasures(text: string): { kind: string; id: string }[] {
  const out: { kind: string; id: string }[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new Error(`line ${index + 1}: not JSON`);
    }
    const { kind, id } = (parsed ?? {}) as { kind?: unknown; id?: unknown };
    if (typeof kind !== 'string' || typeof id !== 'string') throw new Error(`line ${index + 1}: needs kind and id`);
    out.push({ kind, id });
  }
  return out;
}

/** Erases again everything listed that the store still serves: leads first, so their cascades go first. */
export async function replayErasures(
  store: Store,
  clock: Clock,
  erasures: readonly { kind: string; id: string }[],
): Promise<ReplayResult> {
  const crm = new Crm(store, clock);
  const at = new Date(clock.now()).toISOString();
  let erased = 0;
  for (const kind of Object.keys(ERASE_EVENTS) as (keyof typeof ERASE_EVENTS)[]) {
    for (const e of erasures) {
      if (e.kind !== kind || !(await served(store, kind, e.id))) continue;
      await crm.apply(ERASE_EVENTS[kind](e.id, at));
      erased++;
    }
  }
  const stillLive: { kind: string; id: string }[] = [];
  for (const e of erasures) if (await served(store, e.kind, e.id)) stillLive.push({ kind: e.kind, id: e.id });
  return { erased, unchanged: erasures.length - erased, stillLive };
}
