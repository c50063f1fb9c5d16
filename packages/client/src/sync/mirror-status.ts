import type { Kysely } from 'kysely';
import type { MirrorDatabase } from './mirror-schema.js';

export interface TeamStatus {
  team: string;
  /** Seconds since the cursor was last saved; null before the first page. */
  cursor_age_seconds: number | null;
  /** Records held per kind (unknown kinds included). */
  counts: Record<string, number>;
  tombstones: number;
  last_error: string | null;
}

/** What `mirror status` prints: each team's cursor age, counts per kind, tombstones and last error. */
export async function mirrorStatus(db: Kysely<MirrorDatabase>, now = new Date()): Promise<{ teams: TeamStatus[] }> {
  const teams = await db.selectFrom('mirror_teams').selectAll().orderBy('team').execute();
  const counts = await db
    .selectFrom('mirror_records')
    .select(['team', 'kind', (eb) => eb.fn.countAll().as('n')])
    .groupBy(['team', 'kind'])
    .orderBy('kind')
    .execute();
  const tombs = await db
    .selectFrom('mirror_tombstones')
    .select(['team', (eb) => eb.fn.countAll().as('n')])
    .groupBy('team')
    .execute();
  return {
    teams: teams.map((t) => ({
      team: t.team,
      cursor_age_seconds: t.cursor_saved_at
        ? Math.max(0, Math.floor((now.getTime() - Date.parse(t.cursor_saved_at)) / 1000))
        : null,
      counts: Object.fromEntries(counts.filter((c) => c.team === t.team).map((c) => [c.kind, Number(c.n)])),
      tombstones: Number(tombs.find((x) => x.team === t.team)?.n ?? 0),
      last_error: t.last_error,
    })),
  };
}
