import type { Clock } from '../../clock.js';
import type { Store } from '../../store/store.js';
import type { TeamState } from '../types.js';
import { runCommand } from './commands.js';
import { dataStepKey, type RepublishKind, sourceOf } from './republish-commands.js';

// Data migrations: changes to stored records that a schema migration (store/sql/migrations.ts) cannot make,
// because they need the write side's projections. Records are serialized once when written, so a field
// added to a record schema and its projection reaches records written earlier only when they are
// projected again: a `republish` step of that kind, listed below. Steps run in list order after the schema
// migrations (`crm-export migrate`, and every command that opens a database creating or migrating it);
// each is recorded in the meta table once done and never runs again. A step interrupted part way is
// simply run again: its chunks are idempotent (a record already republished writes nothing).

/** Records projected again per transaction, so a large database does not hold the writer for long. */
const CHUNK = 500;

export interface StepOptions {
  /** Records per transaction (default 500). */
  chunk?: number;
}

/** What a step does; resumable and idempotent, as a crash may leave it half done. */
export type StepRun = (store: Store, clock: Clock, options: StepOptions) => Promise<void>;

export interface DataStep {
  /** Unique and in order, named like the schema migrations (`0001_lead_new_field`); never renamed once shipped. */
  name: string;
  run: StepRun;
}

/** Every data migration of this build, oldest first. Append only. */
export const DATA_MIGRATIONS: readonly DataStep[] = [];

/**
 * Projects every live record of these kinds again from its entity's state, in chunks (one write command
 * each): a record whose projection changed gets a new version and a feed entry, as any change does; the
 * others write nothing.
 */
export function republish(kinds: readonly RepublishKind[]): StepRun {
  return async (store, clock, options) => {
    const chunk = options.chunk ?? CHUNK;
    const teams = (await store.findEntities<TeamState>('team', {})).map((t) => t.id);
    const inChunks = async (kind: RepublishKind, ids: string[]) => {
      for (let i = 0; i < ids.length; i += chunk) {
        await runCommand(store, 'data.republish', { kind, ids: ids.slice(i, i + chunk), now: clock.now() });
      }
    };
    for (const kind of kinds) {
      const source = sourceOf(kind);
      if (source === 'team') {
        await inChunks(kind, teams);
        continue;
      }
      // One team's ids at a time, so memory follows the largest team rather than the database.
      for (const team of teams) {
        const ids = (await store.findEntities(source, { team })).map((e) => e.id);
        await inChunks(kind, ids);
      }
    }
  };
}

/** Names of the steps not applied to this database yet, in order. */
export async function pendingDataSteps(store: Store, steps: readonly DataStep[] = DATA_MIGRATIONS): Promise<string[]> {
  const pending: string[] = [];
  for (const step of steps) if ((await store.getMeta(dataStepKey(step.name))) === undefined) pending.push(step.name);
  return pending;
}

/** Runs every pending step in order, each marked applied once it finished; returns the names it applied. */
export async function runDataMigrations(
  store: Store,
  clock: Clock,
  steps: readonly DataStep[] = DATA_MIGRATIONS,
  options: StepOptions = {},
): Promise<string[]> {
  const applied: string[] = [];
  for (const step of steps) {
    if ((await store.getMeta(dataStepKey(step.name))) !== undefined) continue;
    await step.run(store, clock, options);
    if (await runCommand(store, 'data.step_applied', { name: step.name, now: clock.now() })) applied.push(step.name);
  }
  return applied;
}
