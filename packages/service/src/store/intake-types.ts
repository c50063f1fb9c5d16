// The values of the intake's tables (migration 0006_intake): where each producer stands, the ids of the
// events applied lately, and the quarantine of events the write side refused. Plain data, both backends.

/** One producer (source) of events: how far it was applied, and what came of its events. */
export interface IntakeSourceRow {
  source: string;
  /** Highest `seq` handled (applied, duplicate, quarantined or rejected); 0 before the first. Kept for ever. */
  lastSeq: number;
  /** Producer time (`at`, epoch ms) of the last event applied; null before the first. */
  lastEventAt: number | null;
  applied: number;
  duplicates: number;
  rejected: number;
  quarantined: number;
  /** When the row last changed (epoch ms, the service's clock). */
  updatedAt: number;
}

/** An event id applied lately, with the digest of its content (kept at least the dedupe window). */
export interface IntakeIdRow {
  source: string;
  id: string;
  /** Digest of the event's canonical stored form. */
  digest: string;
  /** Its `seq`; null for an event that came from a file. */
  seq: number | null;
  /** Epoch ms. */
  appliedAt: number;
}

/** An event the write side refused, or one waiting behind such an event in its lane. */
export interface QuarantineRow {
  source: string;
  seq: number;
  id: string | null;
  /** The ordering lane: `lead:<id>`, else the entity the event names (`call:<id>`...). */
  lane: string;
  type: string;
  /** The event in stored form (content fields dropped), as JSON. */
  event: string;
  /** Why: a refusal code, or `waiting_behind`. */
  code: string;
  field: string | null;
  message: string;
  /** Times the write side was asked to apply it (0 for one that only waited). */
  attempts: number;
  /** Epoch ms. */
  firstAt: number;
  lastAt: number;
}

/** Which quarantined events a read or a drop names: every one, a source's, a lane's, or one event. */
export interface QuarantineFilter {
  source?: string;
  lane?: string;
  seq?: number;
}

/** A source's quarantine at a glance (metrics, status). */
export interface QuarantineSummary {
  source: string;
  events: number;
  /** `firstAt` of its oldest event (epoch ms). */
  oldestAt: number;
}
