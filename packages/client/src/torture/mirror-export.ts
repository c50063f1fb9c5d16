// `mirror export`: the reference consumer's side of the torture kit's copy contract. Every record of the
// mirror becomes one NDJSON line `{"team","kind","id","version","record"}`, read in keyset pages so a
// large mirror is never held in memory at once.
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Kysely } from 'kysely';
import type { MirrorDatabase } from '../sync/mirror-schema.js';

const PAGE = 1000;

/** Writes the mirror's records to `path` (replaced), or to standard output without one. */
export async function exportMirror(db: Kysely<MirrorDatabase>, path?: string): Promise<number> {
  const fd = path === undefined ? 1 : openSync(path, 'w');
  let written = 0;
  try {
    let after: [string, string, string] | null = null;
    for (;;) {
      let q = db
        .selectFrom('mirror_records')
        .select(['team', 'kind', 'id', 'version', 'json'])
        .orderBy('team')
        .orderBy('kind')
        .orderBy('id')
        .limit(PAGE);
      if (after) {
        const [team, kind, id] = after;
        q = q.where((eb) => eb(eb.refTuple('team', 'kind', 'id'), '>', eb.tuple(team, kind, id)));
      }
      const rows = await q.execute();
      if (rows.length === 0) break;
      const text = rows
        .map(
          (r) =>
            `{"team":${JSON.stringify(r.team)},"kind":${JSON.stringify(r.kind)},"id":${JSON.stringify(r.id)},"version":${Number(r.version)},"record":${r.json}}\n`,
        )
        .join('');
      writeSync(fd, text);
      written += rows.length;
      const last = rows[rows.length - 1] as (typeof rows)[number];
      after = [last.team, last.kind, last.id];
    }
  } finally {
    if (path !== undefined) closeSync(fd);
  }
  return written;
}
