import type { Store } from '../../src/store/store.js';

/** Writes a setting in a transaction of its own, as tests arrange state (the service writes settings through write/). */
export function putMeta(store: Store, key: string, value: string): Promise<void> {
  return store.write((tx) => tx.setMeta(key, value));
}
