// The service's current data, read from its SQLite database (test only), against the mirror.
import { isDeepStrictEqual } from 'node:util';
import { KNOWN_FEED_KINDS } from '../../src/client/types.js';
import { inspectDatabase } from '../support/sqlite-inspect.js';

const FEED_KINDS: readonly string[] = KNOWN_FEED_KINDS;

export interface MirrorDiff {
  /** Records of the service missing from the mirror or held at another version or content. */
  missingOrStale: string[];
  /** Mirror rows with no live record in the service (a removed record left behind). */
  extra: string[];
  /** (team, kind, id) keys that appear more than once in the mirror. */
  duplicates: string[];
  /** Records compared. */
  compared: number;
}

export function compareMirror(servicePath: string, mirrorPath: string, teams: string[]): MirrorDiff {
  const svc = inspectDatabase(servicePath);
  const mir = inspectDatabase(mirrorPath);
  try {
    const marks = teams.map(() => '?').join(',');
    const kinds = FEED_KINDS.map(() => '?').join(',');
    const live = svc
      .prepare(
        `select team, kind, id, version, json from records where removed is null and team in (${marks}) and kind in (${kinds})`,
      )
      .all(...teams, ...FEED_KINDS) as { team: string; kind: string; id: string; version: number; json: string }[];
    const rows = mir
      .prepare(`select team, kind, id, version, json from mirror_records where team in (${marks})`)
      .all(...teams) as typeof live;
    const held = new Map<string, (typeof rows)[number]>();
    const duplicates: string[] = [];
    for (const r of rows) {
      const k = `${r.team}/${r.kind}/${r.id}`;
      if (held.has(k)) duplicates.push(k);
      held.set(k, r);
    }
    const missingOrStale: string[] = [];
    const liveKeys = new Set<string>();
    for (const r of live) {
      const k = `${r.team}/${r.kind}/${r.id}`;
      liveKeys.add(k);
      const m = held.get(k);
      if (!m) missingOrStale.push(`${k} missing`);
      else if (Number(m.version) !== Number(r.version)) missingOrStale.push(`${k} v${m.version} != v${r.version}`);
      else if (!isDeepStrictEqual(JSON.parse(m.json), JSON.parse(r.json))) missingOrStale.push(`${k} content differs`);
    }
    const extra = [...held.keys()].filter((k) => !liveKeys.has(k));
    return { missingOrStale, extra, duplicates, compared: live.length };
  } finally {
    svc.close();
    mir.close();
  }
}
