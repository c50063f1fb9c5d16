import type { Clock } from '../../clock.js';
import { iso as isoOf } from '../../clock.js';
import { FEED_KINDS, type FeedKind, type RecordKind, type RemovalReason } from '../../schemas/enums.js';
import type { RecordOf } from '../../schemas/records.js';
import type { RecordRow, WriteTx } from '../../store/store.js';
import { CachedTx, type RecordMemo } from './cached-tx.js';
import { WriteError } from './write-error.js';

// The one way exported records change. A feed record gets a new version (and a feed entry in the same
// transaction) only when its projection differs from what is stored, so a change to a field that is
// not exported writes nothing.

export type FilterColumns = Partial<Pick<RecordRow, 'lead' | 'board' | 'stage' | 'status' | 'email' | 'phone'>>;

const FEED = new Set<string>(FEED_KINDS);

/**
 * A feed record's exported shape as its schema declares it, so a missing, misspelled or extra field fails
 * the type check. Its `version` and `updated_at` are placeholders that `publish` fills.
 */
export type Projection<K extends FeedKind> = RecordOf<K>;

/** The placeholders a projection carries until `publish` gives it a version. */
export const PENDING = { version: 0, updated_at: '' } as const;

/** Never-fed records (teams, members, bookable services), written whole. */
type ListedKind = Exclude<RecordKind, FeedKind>;

const SLOT = '"version":-1,"updated_at":""';

/** The projection's JSON around the `version` and `updated_at` slot, compared and filled without rebuilding it. */
interface Serialized {
  /** The stored JSON of this projection at a version and time. */
  json(version: number, updatedAt: string): string;
  /** Whether `json` is what `json(version, updatedAt)` would give. */
  matches(json: string, version: number, updatedAt: string): boolean;
}

/**
 * The projection serialized once with a slot for `version` and `updated_at` (adjacent in every
 * projection), so comparing with the stored JSON and writing the new version cost one `JSON.stringify`.
 * The projection is the caller's fresh object: its placeholders are overwritten in place (same key order).
 */
function serializer(projection: Projection<FeedKind>): Serialized {
  projection.version = -1;
  projection.updated_at = '';
  const template = JSON.stringify(projection);
  const at = template.indexOf(SLOT);
  if (at < 0) {
    const json = (version: number, updatedAt: string) =>
      JSON.stringify({ ...projection, version, updated_at: updatedAt });
    return { json, matches: (stored, version, updatedAt) => json(version, updatedAt) === stored };
  }
  const head = template.slice(0, at);
  const tail = template.slice(at + SLOT.length);
  const middle = (version: number, updatedAt: string) =>
    `"version":${version},"updated_at":${JSON.stringify(updatedAt)}`;
  return {
    json: (version, updatedAt) => `${head}${middle(version, updatedAt)}${tail}`,
    // Lengths and the fixed ends first: a changed projection mostly differs there, without a new string.
    matches: (stored, version, updatedAt) => {
      const mid = middle(version, updatedAt);
      return (
        stored.length === head.length + mid.length + tail.length &&
        stored.startsWith(head) &&
        stored.endsWith(tail) &&
        stored.startsWith(mid, head.length)
      );
    },
  };
}

/**
 * Whether the stored JSON is the projection with the stored version and time. Stored JSON is what
 * `JSON.stringify` made of a projection (same key order), so comparing strings is comparing the
 * exported fields, without parsing the stored record.
 */
function sameExported(stored: RecordMemo, json: string, serialized: Serialized): boolean {
  const updatedAt = stored.updatedAt ?? storedUpdatedAt(json);
  return updatedAt !== undefined && serialized.matches(json, stored.version, updatedAt);
}

/**
 * The record's `updated_at`, read without parsing: the last `"updated_at":"` key (nothing after it in a
 * projection is a nested object that could carry one). Were it ever another, the strings would differ
 * and a version too many is written, never one too few.
 */
function storedUpdatedAt(json: string): string | undefined {
  const key = '"updated_at":"';
  const at = json.lastIndexOf(key);
  if (at < 0) return undefined;
  const start = at + key.length;
  return json.slice(start, json.indexOf('"', start));
}

let lastMs = Number.NaN;
let lastIso = '';
/** `iso`, remembering the last answer: the records an event writes mostly share one clock reading. */
function iso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = isoOf(ms);
    lastMs = ms;
  }
  return lastIso;
}

/** The operations hand in their context's cached transaction; any other caller gets a fresh cache. */
const cached = (tx: WriteTx): CachedTx => (tx instanceof CachedTx ? tx : new CachedTx(tx));

function row(
  kind: RecordKind,
  id: string,
  team: string,
  version: number,
  at: string,
  json: string,
  f: FilterColumns,
): RecordRow {
  return {
    kind,
    id,
    team,
    lead: f.lead ?? null,
    board: f.board ?? null,
    stage: f.stage ?? null,
    status: f.status ?? null,
    email: f.email ?? null,
    phone: f.phone ?? null,
    version,
    updatedAt: at,
    json,
  };
}

/** Writes a feed record when its exported projection changed; returns whether a version was written. */
export async function publish<K extends FeedKind>(
  tx: WriteTx,
  clock: Clock,
  kind: K,
  id: string,
  team: string,
  projection: Projection<K>,
  filters: FilterColumns = {},
): Promise<boolean> {
  const existing = await cached(tx).current(kind, id);
  if (existing?.removed) throw new WriteError(`${kind} ${id} was removed; a record that comes back needs a new id`);
  const serialized = serializer(projection);
  if (existing?.json && sameExported(existing, existing.json, serialized)) return false;
  const now = clock.now();
  const at = iso(now);
  const version = (existing?.version ?? 0) + 1;
  const json = serialized.json(version, at);
  await tx.putRecord(row(kind, id, team, version, at, json, filters));
  await tx.appendFeed({ team, kind, id, version, recordedAt: now, body: json, removed: null });
  return true;
}

/** Writes a never-fed record (team, member, bookable service) when it changed. */
export async function publishListed<K extends ListedKind>(
  tx: WriteTx,
  clock: Clock,
  kind: K,
  id: string,
  team: string,
  record: RecordOf<K>,
): Promise<void> {
  const existing = await cached(tx).current(kind, id);
  const json = JSON.stringify(record);
  if (existing?.json === json && !existing.removed) return;
  const version = (existing?.version ?? 0) + 1;
  await tx.putRecord(row(kind, id, team, version, iso(clock.now()), json, {}));
}

/**
 * Removes a record: a tombstone, its earlier feed entries purged (personal data must not outlive the
 * removal) and, for feed kinds, a removal entry. A record already removed or never written is left alone.
 */
export async function removeRecord(
  tx: WriteTx,
  clock: Clock,
  kind: RecordKind,
  id: string,
  team: string,
  reason: RemovalReason,
): Promise<void> {
  const existing = await cached(tx).current(kind, id);
  if (!existing || existing.removed) return;
  const now = clock.now();
  const version = existing.version + 1;
  await tx.removeRecord(kind, id, reason, version, iso(now));
  if (!FEED.has(kind)) return;
  await tx.purgeFeed(kind as FeedKind, id);
  await tx.appendFeed({ team, kind: kind as FeedKind, id, version, recordedAt: now, body: null, removed: reason });
}
