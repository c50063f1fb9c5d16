import { ANY_AGE, type Store } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import type { TeamState } from '../write/types.js';

// A fresh demo writes every intermediate version of its records (a lead's story is a dozen changes),
// and the feed keeps one entry per version until retention trims superseded ones a day later. Nobody
// can have read a team's feed before the team is prepared for a key (the feed answers 409
// capture_not_ready until then, docs/feed.md), so for such a team the superseded entries are dropped
// at once: every consumer's first page will start after this point and sees each record's newest entry,
// exactly what retention would leave a day later. The dropping is retention's own command (`feed.trim`:
// one team, superseded entries of any age, removals kept), in its bounded batches.

/** Feed position up to which each team was compacted, so a team with no new entry is passed over. */
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
    const state = (await store.getEntity<TeamState>('team', team))?.state;
    const unread = state !== undefined && state.capturedAt === null && (state.captureRequestedAt ?? null) === null;
    if (unread)
      dropped += await runCommand(store, 'feed.trim', { removalsBefore: null, supersededBefore: ANY_AGE, team });
    upTo.set(team, head);
  }
  return dropped;
}
