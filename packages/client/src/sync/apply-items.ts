// Rule 2 of the spec's "Consumer behaviour the contract expects" for a list of feed items: which to store,
// which to skip, which to remove, and the batched writes that follow.
import type { Kysely, Transaction } from 'kysely';
import type { UnknownFeedItem } from '../client/types.js';
import type {
  MirrorContactPermissionsTable,
  MirrorDatabase,
  MirrorRecordsTable,
  MirrorTombstonesTable,
} from './mirror-schema.js';

/** Every feed item, known kind or not, has this shape. */
type FeedItem = UnknownFeedItem;

type Db = Kysely<MirrorDatabase> | Transaction<MirrorDatabase>;

/** The lead facets share their lead's id; removing a lead removes them (and its activities). */
export const LEAD_FACET_KINDS = ['lead_attribution', 'lead_response'] as const;

export interface ApplyResult {
  /** Records stored (new or higher version). */
  stored: number;
  /** Removals applied. */
  removed: number;
  /** Items skipped: same or lower version, or a facet/activity of a removed lead. */
  skipped: number;
  /** Records that were stored, for reference checks. */
  storedObjects: { kind: string; object: Record<string, unknown> }[];
  /** True when this page ended a full resync and unmarked records were swept. */
  swept: boolean;
}

/** What a lead's removal takes with it. */
const DEPENDANT_KINDS: string[] = [...LEAD_FACET_KINDS, 'activity'];

type RecordRow = MirrorRecordsTable;
type PermissionsRow = MirrorContactPermissionsTable;
interface PendingWrites {
  upserts: Map<string, RecordRow>;
  permissions: Map<string, PermissionsRow>;
  newTombs: Map<string, MirrorTombstonesTable>;
  deletes: { kind: string; id: string }[];
  removedLeads: string[];
}

interface Held {
  version: number;
  marked: boolean;
}

const key = (kind: string, id: string) => `${kind}\u0000${id}`;

/**
 * Rule 2 for a list of items, inside the caller's transaction. Every decision is made in memory, item by
 * item in feed order; the writes then go out in a few batched statements (contact permissions first).
 */
export async function applyItems(
  trx: Db,
  team: string,
  items: FeedItem[],
  now: () => Date,
): Promise<Omit<ApplyResult, 'swept'>> {
  const result: Omit<ApplyResult, 'swept'> = { stored: 0, removed: 0, skipped: 0, storedObjects: [] };
  if (items.length === 0) return result;
  const { held, tombs } = await load(trx, team, items);
  const at = now().toISOString();
  const upserts = new Map<string, RecordRow>();
  const permissions = new Map<string, PermissionsRow>();
  const newTombs = new Map<string, MirrorTombstonesTable>();
  const deletes: { kind: string; id: string }[] = [];
  const removedLeads: string[] = [];
  for (const item of items) {
    const k = key(item.kind, item.id);
    const record = held.get(k);
    const tomb = tombs.get(k);
    // During a full resync versions are forgotten: an unmarked record takes whatever the feed delivers.
    const heldVersion = record?.marked ? record.version : undefined;
    if ((heldVersion !== undefined && heldVersion >= item.version) || (tomb !== undefined && tomb >= item.version)) {
      result.skipped++;
      continue;
    }
    const owningLead = (LEAD_FACET_KINDS as readonly string[]).includes(item.kind) ? item.id : activityLead(item);
    if (owningLead !== null && tombs.has(key('lead', owningLead))) {
      // A removed lead's attribution, response and activities are ignored from then on.
      result.skipped++;
      continue;
    }
    if (item.removed) {
      upserts.delete(k);
      deletes.push({ kind: item.kind, id: item.id });
      newTombs.set(k, {
        team,
        kind: item.kind,
        id: item.id,
        version: item.version,
        reason: item.removed.reason,
        removed_at: at,
      });
      if (item.kind === 'lead') {
        removedLeads.push(item.id);
        permissions.delete(item.id);
        for (const [uk, row] of upserts)
          if (row.lead === item.id && DEPENDANT_KINDS.includes(row.kind)) upserts.delete(uk);
      }
      held.delete(k);
      tombs.set(k, item.version);
      result.removed++;
      continue;
    }
    const object = (item.object ?? {}) as Record<string, unknown>;
    if (item.kind === 'lead') {
      const cp = permissionsRow(team, item.id, item.version, object);
      if (cp) permissions.set(item.id, cp);
    }
    upserts.set(k, {
      team,
      kind: item.kind,
      id: item.id,
      version: item.version,
      lead: owningLead ?? (item.kind === 'lead' ? item.id : null),
      updated_at: typeof object.updated_at === 'string' ? object.updated_at : null,
      json: JSON.stringify(object),
      marked: 1,
    });
    if (tomb !== undefined) {
      // Only after a restore can a version above a tombstone arrive; the record replaces the tombstone.
      newTombs.delete(k);
      tombs.delete(k);
      deletes.push({ kind: `tombstone:${item.kind}`, id: item.id });
    }
    held.set(k, { version: item.version, marked: true });
    result.stored++;
    result.storedObjects.push({ kind: item.kind, object });
  }
  await write(trx, team, { upserts, permissions, newTombs, deletes, removedLeads });
  return result;
}

/** Versions held for the page's ids, and tombstones for them and for the leads its activities name. */
async function load(trx: Db, team: string, items: FeedItem[]) {
  const ids = [...new Set(items.map((i) => i.id))];
  const leadsOfActivities = items.map((i) => activityLead(i)).filter((l): l is string => l !== null);
  const held = new Map<string, Held>();
  const rows = await trx
    .selectFrom('mirror_records')
    .select(['kind', 'id', 'version', 'marked'])
    .where('team', '=', team)
    .where('id', 'in', ids)
    .execute();
  for (const row of rows) held.set(key(row.kind, row.id), { version: Number(row.version), marked: row.marked === 1 });
  const tombs = new Map<string, number>();
  const tombRows = await trx
    .selectFrom('mirror_tombstones')
    .select(['kind', 'id', 'version'])
    .where('team', '=', team)
    .where('id', 'in', [...new Set([...ids, ...leadsOfActivities])])
    .execute();
  for (const row of tombRows) tombs.set(key(row.kind, row.id), Number(row.version));
  return { held, tombs };
}

async function write(trx: Db, team: string, w: PendingWrites): Promise<void> {
  for (const d of w.deletes) {
    const table = d.kind.startsWith('tombstone:') ? 'mirror_tombstones' : 'mirror_records';
    const kind = d.kind.replace(/^tombstone:/, '');
    await trx.deleteFrom(table).where('team', '=', team).where('kind', '=', kind).where('id', '=', d.id).execute();
  }
  if (w.removedLeads.length > 0) {
    await trx
      .deleteFrom('mirror_records')
      .where('team', '=', team)
      .where('lead', 'in', w.removedLeads)
      .where('kind', 'in', DEPENDANT_KINDS)
      .execute();
    await trx
      .deleteFrom('mirror_contact_permissions')
      .where('team', '=', team)
      .where('lead', 'in', w.removedLeads)
      .execute();
  }
  for (const batch of chunks([...w.newTombs.values()], 200)) {
    await trx
      .insertInto('mirror_tombstones')
      .values(batch)
      .onConflict((oc) =>
        oc.columns(['team', 'kind', 'id']).doUpdateSet((eb) => ({
          version: eb.ref('excluded.version'),
          reason: eb.ref('excluded.reason'),
          removed_at: eb.ref('excluded.removed_at'),
        })),
      )
      .execute();
  }
  // A lead's contact permissions are stored first.
  for (const batch of chunks([...w.permissions.values()], 200)) {
    await trx
      .insertInto('mirror_contact_permissions')
      .values(batch)
      .onConflict((oc) =>
        oc.columns(['team', 'lead']).doUpdateSet((eb) => ({
          version: eb.ref('excluded.version'),
          do_not_contact: eb.ref('excluded.do_not_contact'),
          email_opt_out: eb.ref('excluded.email_opt_out'),
          email_opt_out_at: eb.ref('excluded.email_opt_out_at'),
          whatsapp_consent: eb.ref('excluded.whatsapp_consent'),
          provenance: eb.ref('excluded.provenance'),
        })),
      )
      .execute();
  }
  for (const batch of chunks([...w.upserts.values()], 200)) {
    await trx
      .insertInto('mirror_records')
      .values(batch)
      .onConflict((oc) =>
        oc.columns(['team', 'kind', 'id']).doUpdateSet((eb) => ({
          version: eb.ref('excluded.version'),
          lead: eb.ref('excluded.lead'),
          updated_at: eb.ref('excluded.updated_at'),
          json: eb.ref('excluded.json'),
          marked: eb.ref('excluded.marked'),
        })),
      )
      .execute();
  }
}

function activityLead(item: FeedItem): string | null {
  if (item.kind !== 'activity' || !item.object) return null;
  const lead = (item.object as Record<string, unknown>).lead;
  return typeof lead === 'string' ? lead : null;
}

/** A lead's `contact_permissions` as their own row: the fields that say whether and how to contact a person. */
function permissionsRow(
  team: string,
  lead: string,
  version: number,
  object: Record<string, unknown>,
): PermissionsRow | null {
  const cp = object.contact_permissions as Record<string, unknown> | undefined;
  if (!cp || typeof cp !== 'object') return null;
  const bool = (v: unknown) => (v === true ? 1 : 0);
  return {
    team,
    lead,
    version,
    do_not_contact: bool(cp.do_not_contact),
    email_opt_out: bool(cp.email_opt_out),
    email_opt_out_at: typeof cp.email_opt_out_at === 'string' ? cp.email_opt_out_at : null,
    whatsapp_consent: typeof cp.whatsapp_consent === 'boolean' ? bool(cp.whatsapp_consent) : null,
    provenance: JSON.stringify(cp.provenance ?? null),
  };
}

function chunks<T>(xs: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}
