import type { Store } from '../store/store.js';

// Where each intake source stands (docs/ingest.md; the intake endpoint's docs/intake.md): what
// `crm-export admin intake status` prints and the intake's metrics report. Figures only: names, numbers
// and times, never an event's values.

/** One source's figures. */
export interface IntakeSourceStatus {
  source: string;
  /** Highest seq handled (0 for a source that sends no seqs, such as `ingest`). */
  lastSeq: number;
  /** Producer time of the last event applied (ISO 8601), null before the first. */
  lastEventAt: string | null;
  /** Seconds from that time to now: how far the export is behind the producer's last applied change. */
  lagSeconds: number | null;
  applied: number;
  duplicates: number;
  rejected: number;
  /** Events sent to the quarantine since the source began (waiting ones included). */
  quarantinedTotal: number;
  /** Events in the quarantine now. */
  quarantineEvents: number;
  /** Age in seconds of the oldest event in the quarantine now; null when empty. */
  quarantineOldestSeconds: number | null;
  /** When the source's row last changed (ISO 8601). */
  updatedAt: string;
}

export type IntakeStatusStore = Pick<Store, 'intakeSources' | 'quarantineSummary'>;

const seconds = (ms: number) => Math.max(0, Math.round(ms / 100) / 10);

/** Every source's figures at `now` (epoch ms), by name. */
export async function intakeStatus(store: IntakeStatusStore, now: number): Promise<IntakeSourceStatus[]> {
  const [sources, quarantine] = await Promise.all([store.intakeSources(), store.quarantineSummary()]);
  const held = new Map(quarantine.map((q) => [q.source, q]));
  return sources.map((s) => {
    const q = held.get(s.source);
    return {
      source: s.source,
      lastSeq: s.lastSeq,
      lastEventAt: s.lastEventAt === null ? null : new Date(s.lastEventAt).toISOString(),
      lagSeconds: s.lastEventAt === null ? null : seconds(now - s.lastEventAt),
      applied: s.applied,
      duplicates: s.duplicates,
      rejected: s.rejected,
      quarantinedTotal: s.quarantined,
      quarantineEvents: q?.events ?? 0,
      quarantineOldestSeconds: q ? seconds(now - q.oldestAt) : null,
      updatedAt: new Date(s.updatedAt).toISOString(),
    };
  });
}
