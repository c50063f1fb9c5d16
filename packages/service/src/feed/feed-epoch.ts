import type { Store } from '../store/store.js';
import { drawTokens, runCommand } from '../write/commands/commands.js';
import { FEED_EPOCH_META_KEY, INITIAL_FEED_EPOCH } from '../write/commands/meta-state.js';

// The feed epoch: a random token every feed cursor carries. Marking a restore from backup replaces it,
// so every cursor issued before the mark gets 409 resync_required and a consumer never receives the
// restored (lower) versions silently. A random token, not a counter: a restored database carries the
// counter of its backup, and counting up from there could land on a value issued before the restore.

export async function currentFeedEpoch(store: Pick<Store, 'getMeta'>): Promise<string> {
  return (await store.getMeta(FEED_EPOCH_META_KEY)) ?? INITIAL_FEED_EPOCH;
}

/** Records that the database was restored from a backup; returns the new epoch. */
export async function markRestore(store: Store): Promise<{ previous: string; epoch: string }> {
  return runCommand(store, 'feed.mark_restore', { tokens: drawTokens(16) });
}
