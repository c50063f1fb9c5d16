// Rule 6: boards, members and bookable services are refreshed at team start, when an item names an
// unknown id, and at least once a day; ids that stay unresolved are remembered so they do not trigger
// a refresh on every page.
import type { CrmExportClient } from '../client/crm-export-client.js';
import type { FeedItem } from '../client/types.js';
import type { LockFence, MirrorStore } from './mirror-store.js';

export const REFERENCE_KINDS = ['board', 'stage', 'member', 'booking_service'] as const;
export type ReferenceKind = (typeof REFERENCE_KINDS)[number];

const PREFIX_KIND: Record<string, ReferenceKind> = {
  brd_: 'board',
  stg_: 'stage',
  mem_: 'member',
  svc_: 'booking_service',
};

/** Every board, stage, member and bookable-service id a record names, wherever it sits. */
export function referencedIds(object: unknown, out = new Map<string, ReferenceKind>()): Map<string, ReferenceKind> {
  if (typeof object === 'string') {
    const prefix = object.slice(0, object.indexOf('_') + 1);
    const kind = PREFIX_KIND[prefix];
    if (kind) out.set(object, kind);
  } else if (Array.isArray(object)) {
    for (const v of object) referencedIds(v, out);
  } else if (object !== null && typeof object === 'object') {
    for (const [k, v] of Object.entries(object)) {
      // A board's own stages define ids rather than naming them.
      if (k === 'stages' || k === 'id') continue;
      referencedIds(v, out);
    }
  }
  return out;
}

/** What the mirror knows for one team: the ids it can resolve and those remembered as unresolved. */
export class ReferenceIndex {
  private known = new Set<string>();
  private unresolved = new Set<string>();
  private loaded = false;

  constructor(
    private readonly store: MirrorStore,
    private readonly team: string,
    /** Proves the team's sync lock is still held inside each refresh's transaction. */
    private readonly fence?: LockFence,
  ) {}

  async load(): Promise<void> {
    const db = this.store.db;
    this.known.clear();
    this.unresolved.clear();
    const boards = await db
      .selectFrom('mirror_records')
      .select('json')
      .where('team', '=', this.team)
      .where('kind', '=', 'board')
      .execute();
    for (const b of boards) this.addBoard(JSON.parse(b.json) as Record<string, unknown>);
    const refs = await db.selectFrom('mirror_references').select('id').where('team', '=', this.team).execute();
    for (const r of refs) this.known.add(r.id);
    const un = await db.selectFrom('mirror_unresolved').select('id').where('team', '=', this.team).execute();
    for (const u of un) this.unresolved.add(u.id);
    this.loaded = true;
  }

  addBoard(board: Record<string, unknown>): void {
    if (typeof board.id === 'string') this.known.add(board.id);
    if (Array.isArray(board.stages)) {
      for (const s of board.stages as { id?: unknown }[]) if (typeof s.id === 'string') this.known.add(s.id);
    }
  }

  /** Ids named by these stored records that are neither known nor already remembered as unresolved. */
  async unknownIn(stored: { kind: string; object: Record<string, unknown> }[]): Promise<Map<string, ReferenceKind>> {
    if (!this.loaded) await this.load();
    for (const s of stored) if (s.kind === 'board') this.addBoard(s.object);
    const unknown = new Map<string, ReferenceKind>();
    for (const s of stored) {
      for (const [id, kind] of referencedIds(s.object)) {
        if (!this.known.has(id) && !this.unresolved.has(id)) unknown.set(id, kind);
      }
    }
    return unknown;
  }

  /**
   * Reads `/boards`, `/members` and `/booking_services` again. Members and services replace the team's
   * lists (one who left drops out); boards go through the version rule like feed items.
   * Ids in `pending` still unknown afterwards are remembered as unresolved.
   */
  async refresh(client: CrmExportClient, pending: Map<string, ReferenceKind> = new Map()): Promise<void> {
    const team = this.team;
    const [members, services] = [await client.members({ team }), await client.bookingServices({ team })];
    const boards: FeedItem[] = [];
    for await (const b of client.iterate.boards({ team, limit: 100 })) {
      boards.push({ kind: 'board', id: b.id, version: b.version, object: b } as FeedItem);
    }
    const at = new Date().toISOString();
    await this.store.db.transaction().execute(async (trx) => {
      await this.fence?.(trx);
      await trx.deleteFrom('mirror_references').where('team', '=', team).execute();
      const rows = [
        ...members.data.map((m) => ({ team, kind: 'member', id: m.id, json: JSON.stringify(m), refreshed_at: at })),
        ...services.data.map((s) => ({
          team,
          kind: 'booking_service',
          id: s.id,
          json: JSON.stringify(s),
          refreshed_at: at,
        })),
      ];
      for (let i = 0; i < rows.length; i += 200)
        await trx
          .insertInto('mirror_references')
          .values(rows.slice(i, i + 200))
          .execute();
      await this.store.applyItems(trx, team, boards);
      await trx.updateTable('mirror_teams').set({ references_refreshed_at: at }).where('team', '=', team).execute();
    });
    await this.load();
    const stillUnknown = [...pending].filter(([id]) => !this.known.has(id));
    await this.store.db.transaction().execute(async (trx) => {
      await this.fence?.(trx);
      // Ids that resolved now are no longer remembered as unresolved.
      const resolved = [...this.unresolved].filter((id) => this.known.has(id));
      if (resolved.length > 0) {
        await trx.deleteFrom('mirror_unresolved').where('team', '=', team).where('id', 'in', resolved).execute();
      }
      for (const [id, kind] of stillUnknown) {
        await trx
          .insertInto('mirror_unresolved')
          .values({ team, kind, id, first_seen_at: at, last_checked_at: at })
          .onConflict((oc) => oc.columns(['team', 'kind', 'id']).doUpdateSet({ last_checked_at: at }))
          .execute();
      }
    });
    await this.load();
  }
}
