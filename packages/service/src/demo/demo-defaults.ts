// Defaults of the demo, apart from the generator so `crm-export --help` loads no faker.

/**
 * Events per transaction (about 500 leads): a lead's rows are written once per transaction (its
 * intermediate versions only reach the feed), and the commit is amortized; memory stays flat.
 */
export const DEMO_BATCH = 5000;
/** Example teams of the one organization. */
export const DEFAULT_DEMO_TEAMS = 2;
/** Leads per team. */
export const DEFAULT_DEMO_LEADS = 200;

/** The default end of the demo's history: runs on the same day with the same seed give the same records. */
export function startOfUtcDay(ms: number): number {
  return ms - (ms % 86_400_000);
}
