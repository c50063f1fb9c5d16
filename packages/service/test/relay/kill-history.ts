import { demoEvents } from '../../src/demo/demo-generator.js';

// The history of the kill test, as the CRM writes it to its outbox: the demo's events of one team, each
// with an id, and what a real producer adds to them: events sent twice (the same id and content), a run of
// events sent again, an id sent again with other content, and poison events (a lead the service never
// heard of) with later events of the same lane behind them.

export interface KillHistory {
  /** The outbox rows' events, in the order the CRM inserts them. */
  rows: Record<string, unknown>[];
  /** How many rows repeat an earlier id with the same content. */
  duplicates: number;
  /** How many rows are poison or wait behind one. */
  poison: number;
  /** Rows that reuse an id with other content. */
  conflicts: number;
}

export function killHistory(seed: number, leads: number): KillHistory {
  const events = [...demoEvents({ seed, teams: 1, leads, now: Date.parse('2026-11-01T00:00:00Z') })].flatMap(
    (chunk) => chunk.events as unknown as Record<string, unknown>[],
  );
  const base: Record<string, unknown>[] = events.map((event, index) => ({ ...event, id: `evt-${seed}-${index}` }));
  const rows: Record<string, unknown>[] = [];
  let duplicates = 0;
  let poison = 0;
  let conflicts = 0;
  const resendAt = Math.floor(base.length * 0.6);
  const poisonAt = new Set([Math.floor(base.length * 0.25), Math.floor(base.length * 0.7)]);
  for (const [index, event] of base.entries()) {
    rows.push(event);
    // Every 17th event comes again a little later, as after a lost answer.
    if (index % 17 === 5 && index >= 3) {
      rows.push(base[index - 3]!);
      duplicates += 1;
    }
    // A run of eight events sent again, as after a producer restored its own position from a backup.
    if (index === resendAt) {
      rows.push(...base.slice(index - 8, index));
      duplicates += 8;
    }
    if (poisonAt.has(index)) {
      // A lead this service never saw: quarantined, and the lead's next event waits behind it.
      const ghost = `lead_ghost${String(index).padStart(10, '0')}`;
      const at = String(event.at);
      rows.push({
        type: 'lead.status_set',
        at,
        lead: ghost,
        status: 'contacted',
        actor: 'human',
        id: `ghost-${index}-a`,
      });
      rows.push({ type: 'lead.archived', at, lead: ghost, reason: 'spam', id: `ghost-${index}-b` });
      poison += 2;
    }
    // Once: an id applied before, sent with other content.
    if (index === Math.floor(base.length / 2)) {
      const earlier = base[index - 10]!;
      rows.push({ ...earlier, at: new Date(Date.parse(String(earlier.at)) + 1000).toISOString() });
      conflicts += 1;
    }
  }
  return { rows, duplicates, poison, conflicts };
}
