import type { Clock } from '../clock.js';
import type { ErasedRecord, Store } from '../store/store.js';
import { Crm } from './crm.js';
import type { CrmEvent } from './events.js';

// Restoring a backup must not bring back a person erased after the backup was taken (docs/deploy.md):
// the erasures recorded by the database being replaced (ids only) are applied again to the restored one.

/** Kinds erased by their own event; the others (activities, facets) go with their lead's erasure. */
const ERASE_EVENTS = {
  lead: (id: string, at: string): CrmEvent => ({ type: 'lead.erased', at, lead: id }),
  call: (id: string, at: string): CrmEvent => ({ type: 'call.erased', at, call: id }),
  conversation: (id: string, at: string): CrmEvent => ({ type: 'conversation.erased', at, conversation: id }),
} as const;

export interface ReplayResult {
  /** Records erased again now (each with its cascade). */
  erased: number;
  /** Listed records already removed (in the backup, or by a lead's cascade just now), or never held. */
  unchanged: number;
  /** Listed records still served after the replay: must be empty. */
  stillLive: { kind: string; id: string }[];
}

/** One NDJSON line per erased record: `{"kind","id","team","erased_at"}`. */
export function erasureLine(r: ErasedRecord): string {
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

/** Erases again every listed record the store still serves: leads first, so their cascades go first. */
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
      if (e.kind !== kind) continue;
      const record = await store.getRecord(kind, e.id);
      if (!record || record.removed) continue;
      await crm.apply(ERASE_EVENTS[kind](e.id, at));
      erased++;
    }
  }
  const stillLive: { kind: string; id: string }[] = [];
  for (const e of erasures) {
    const record = await store.getRecord(e.kind as ErasedRecord['kind'], e.id);
    if (record && !record.removed) stillLive.push({ kind: e.kind, id: e.id });
  }
  return { erased, unchanged: erasures.length - erased, stillLive };
}
