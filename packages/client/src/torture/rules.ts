// The contract rules the torture kit's verdicts cite (docs/contract.md, "What a consumer does", and the
// error table), in one place so every failure names the rule it broke in the same words.

export const RULES = {
  oneRow: 'rule 1, one row per team, kind and id',
  higherVersion: 'rule 2, apply an item only when its version is higher than the one held',
  storeDelivered: 'rule 2, store every record delivered with a higher version, as delivered',
  removal: 'rule 2, a removal deletes the copy and keeps a tombstone',
  removedLead: 'rule 2, a removed lead takes its facets and activities with it and later items for them are ignored',
  cursorAfterPage: 'rule 3, save next_cursor only once the whole page is stored',
  askAgain: 'rule 3, ask again at once while has_more is true',
  pollWait: 'rule 3, once has_more is false wait 1 to 5 minutes before asking again',
  keepState: 'rule 3, the next run goes on from the cursor the last one saved (keep it in CRM_EXPORT_STATE_DIR)',
  resyncKeeps: 'rule 4, a resync keeps the team’s records until the page with has_more false',
  resyncSweeps: 'rule 4, a resync deletes at its end every record the feed did not deliver again',
  resyncVersions: 'rule 4, a resync forgets the versions held',
  notReady: 'rule 4, 409 capture_not_ready keeps everything and never calls for a resync',
  teamGone: 'rule 5, on 404 team_not_accessible read /teams and drop the team only when it is no longer listed',
  retryAfter: 'errors, after a 429 or a 5xx with Retry-After wait at least that long',
  backoff: 'errors, retry a 5xx, the firewall’s bare 429 and a lost connection after a backoff',
  passing: 'errors, a passing fault never ends the run',
  resync: 'rule 4, 410 sync_cursor_expired and 409 resync_required call for a full resync',
  unknown: 'contract, an unknown kind or value never stops the sync',
  copyOnly: 'kit contract, a run with CRM_EXPORT_COPY_ONLY=1 writes the copy and sends no request',
} as const;

export type Rule = (typeof RULES)[keyof typeof RULES];

/** The shortest wait the contract names once a team is caught up or not ready (1 minute). */
export const POLL_WAIT_MS = 60_000;

/** The shortest backoff the kit accepts before a retry that has no Retry-After to go by. */
export const MIN_BACKOFF_MS = 100;

/** Timers and the loopback add jitter: a wait this much shorter still counts as kept. */
export const TIMING_SLACK_MS = 30;
