import { base62 } from '../ids.js';
import type { Store } from '../store/store.js';

// The feed epoch: a random token every feed cursor carries. Marking a restore from backup replaces it,
// so every cursor issued before the mark gets 409 resync_required and a consumer never receives the
// restored (lower) versions silently. A random token, not a counter: a restored database carries the
// counter of its backup, and counting up from there could land on a value issued before the restore.

export const FEED_EPOCH_META_KEY = 'feed_epoch';

/** The epoch of a database that was never marked. */
export const INITIAL_FEED_EPOCH = '0';

export async function currentFeedEpoch(store: Pick<Store, 'getMeta'>): Promise<string> {
  return (await store.getMeta(FEED_EPOCH_META_KEY)) ?? INITIAL_FEED_EPOCH;
}

/** Records that the database was restored from a backup; returns the new epoch. */
export async function markRestore(store: Store): Promise<{ previous: string; epoch: string }> {
  return store.write(async (tx) => {
    const previous = (await tx.getMeta(FEED_EPOCH_META_KEY)) ?? INITIAL_FEED_EPOCH;
    let epoch = base62(16);
    while (epoch === previous) epoch = base62(16);
    await tx.setMeta(FEED_EPOCH_META_KEY, epoch);
    return { previous, epoch };
  });
}
