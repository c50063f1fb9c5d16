import type { Store } from '../store/store.js';
import type { TeamState } from '../write/types.js';

// A fresh demo writes every intermediate version of its records (a lead's story is a dozen changes),
// and the feed keeps one entry per version until retention trims superseded ones a day later. Nobody
// can have read a team's feed before the team is prepared for a key (the feed answers 409
// capture_not_ready until then, docs/feed.md), so for such a team the superseded entries are dropped
// at once: every consumer's first page will start after this point and sees each record's newest entry,
// exactly what retention would leave a day later.

/** Feed position up to which each team was compacted, so each pass only looks at new entries. */
export type CompactedUpTo = Map<string, number>;

/**
 * Drops the superseded feed entries of each team that no key has named yet (neither prepared nor
 * requested for capture); a team a key names keeps its entries for normal retention. Returns rows dropped.
 */
export async function compactUnreadFeeds(store: Store, teams: readonly string[], upTo: CompactedUpTo): Promise<number> {
  let dropped = 0;
  for (const team of teams) {
    const head = await store.feedHead(team);
    if (head <= (upTo.get(team) ?? 0)) continue;
    dropped += await store.write(async (tx) => {
      const state = (await tx.getEntity<TeamState>('team', team))?.state;
      if (!state || state.capturedAt !== null || (state.captureRequestedAt ?? null) !== null) return 0;
      return tx.trimSupersededFeed(team, upTo.get(team) ?? 0);
    });
    upTo.set(team, head);
  }
  return dropped;
}
