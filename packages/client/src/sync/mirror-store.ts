// Applies feed pages to the mirror exactly as the spec's "Consumer behaviour the contract expects" says; the
// items themselves go through rule 2 in apply-items.ts.
import type { Kysely, Transaction } from 'kysely';
import type { UnknownFeedItem } from '../client/types.js';
import { type ApplyResult, applyItems } from './apply-items.js';
import type { MirrorDatabase, MirrorTeamsTable } from './mirror-schema.js';

export { type ApplyResult, LEAD_FACET_KINDS } from './apply-items.js';

/** Every feed item, known kind or not, has this shape. */
type FeedItem = UnknownFeedItem;

type Db = Kysely<MirrorDatabase> | Transaction<MirrorDatabase>;

/**
 * Run first inside a write's transaction: throws when the writer no longer holds the team's sync lock, so
 * the write rolls back (`SyncLock.holdIn`). The sync engine passes one to every write of a team's data.
 */
export type LockFence = (trx: Transaction<MirrorDatabase>) => Promise<void>;

export interface PageToApply {
  data: FeedItem[];
  has_more: boolean;
  next_cursor: string;
}

export class MirrorStore {
  constructor(
    readonly db: Kysely<MirrorDatabase>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The team's cursor and sync state, creating its row on first use. */
  async teamState(team: string): Promise<MirrorTeamsTable> {
    await this.db
      .insertInto('mirror_teams')
      .values({ team, cursor: null, cursor_saved_at: null, resyncing: 0, references_refreshed_at: null })
      .onConflict((oc) => oc.column('team').doNothing())
      .execute();
    return this.db.selectFrom('mirror_teams').selectAll().where('team', '=', team).executeTakeFirstOrThrow();
  }

  /**
   * Stores a whole page and its `next_cursor` in one transaction (rule 3), after `fence` proved the lock is
   * still held: a stale holder's page neither moves the cursor back nor runs a resync's sweep.
   */
  async applyPage(team: string, page: PageToApply, fence?: LockFence): Promise<ApplyResult> {
    return this.db.transaction().execute(async (trx) => {
      await fence?.(trx);
      const state = await trx.selectFrom('mirror_teams').selectAll().where('team', '=', team).executeTakeFirst();
      const result = await this.applyItems(trx, team, page.data);
      const at = this.now().toISOString();
      let swept = false;
      const resyncing = state?.resyncing === 1;
      if (resyncing && !page.has_more) {
        await this.sweep(trx, team);
        swept = true;
      }
      await trx
        .insertInto('mirror_teams')
        .values({ team, cursor: page.next_cursor, cursor_saved_at: at, resyncing: 0, references_refreshed_at: null })
        .onConflict((oc) =>
          oc.column('team').doUpdateSet({
            cursor: page.next_cursor,
            cursor_saved_at: at,
            resyncing: resyncing && !swept ? 1 : 0,
            last_error: null,
            last_error_at: null,
          }),
        )
        .execute();
      return { ...result, swept };
    });
  }
  /** Rule 2 for a list of items, inside the caller's transaction (a method, so a test can wrap it). */
  applyItems(trx: Db, team: string, items: FeedItem[]): Promise<Omit<ApplyResult, 'swept'>> {
    return applyItems(trx, team, items, () => this.now());
  }

  /** Rule 4: forget the team's versions and cursor, keep the records, mark them as not yet redelivered. */
  async startResync(team: string, fence?: LockFence): Promise<void> {
    await this.teamState(team);
    await this.db.transaction().execute(async (trx) => {
      await fence?.(trx);
      await trx.deleteFrom('mirror_tombstones').where('team', '=', team).execute();
      await trx.updateTable('mirror_records').set({ marked: 0 }).where('team', '=', team).execute();
      await trx
        .updateTable('mirror_teams')
        .set({ cursor: null, cursor_saved_at: null, resyncing: 1 })
        .where('team', '=', team)
        .execute();
    });
  }

  /** End of a full resync: records the feed did not redeliver are gone from the service. */
  private async sweep(trx: Db, team: string): Promise<void> {
    await trx.deleteFrom('mirror_records').where('team', '=', team).where('marked', '=', 0).execute();
    await trx
      .deleteFrom('mirror_contact_permissions')
      .where('team', '=', team)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('mirror_records as r')
              .select('r.id')
              .where('r.team', '=', team)
              .where('r.kind', '=', 'lead')
              .whereRef('r.id', '=', 'mirror_contact_permissions.lead'),
          ),
        ),
      )
      .execute();
  }

  /** Rule 5: the key no longer reads the team: delete its data and cursor. */
  async deleteTeam(team: string, fence?: LockFence): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await fence?.(trx);
      for (const table of [
        'mirror_records',
        'mirror_tombstones',
        'mirror_contact_permissions',
        'mirror_references',
        'mirror_unresolved',
        'mirror_teams',
      ] as const) {
        await trx.deleteFrom(table).where('team', '=', team).execute();
      }
    });
  }

  /** Remembers the latest failure for `mirror status` (codes and messages only, never data). */
  async recordError(team: string, message: string | null): Promise<void> {
    await this.teamState(team);
    await this.db
      .updateTable('mirror_teams')
      .set({ last_error: message, last_error_at: message === null ? null : this.now().toISOString() })
      .where('team', '=', team)
      .execute();
  }
}
