import type { Static, TSchema } from 'typebox';
import type { Clock } from '../clock.js';
import type { Limits } from '../limits.js';
import type { Store } from '../store/store.js';
import type { LimiterCounters } from '../usage/usage-reads.js';

// One action of the management plane: a typed function with its input and output schemas and the scope it
// needs. The `admin` commands (cli/) and the management API (manage/api/) both run it through `perform`
// (perform.ts), so the two give the same results and write the same audit entries.

/** What an operator token may do over the management API (the `admin` command runs with every scope). */
export const MANAGE_SCOPES = ['read', 'keys', 'operate'] as const;
export type ManageScope = (typeof MANAGE_SCOPES)[number];

/** Who made a change: the OS user (CLI) or the token's name (API), and the person it acted for. */
export interface Actor {
  name: string;
  /** The user of the calling application who asked for the change (API header `On-Behalf-Of`). */
  onBehalfOf?: string | undefined;
}

/** Failed-authentication lockouts, as the process that holds the counters sees them (access/). */
export interface LockoutControl {
  /** False when the counters live in one process's memory only. */
  readonly shared: boolean;
  keyStatus(keyId: string): Promise<{ failures: number; lockedUntil: string | null }>;
  /** Client addresses locked out now, soonest end first. */
  lockedAddresses(): Promise<{ address: string; lockedUntil: string }[]>;
  unlockKey(keyId: string): Promise<void>;
  unlockAddress(ip: string): Promise<void>;
}

/** When and from where each key was last used, if something records it. */
export type LastUse = (keyIds: readonly string[]) => Promise<Map<string, { at: string; address: string | null }>>;

/** What an action runs with. */
export interface ManageContext {
  store: Store;
  clock: Clock;
  limits: Limits;
  actor: Actor;
  /** Absent: lockouts cannot be read here (no shared counters). */
  lockouts?: LockoutControl | undefined;
  lastUse?: LastUse | undefined;
  /** The rate limit and quota counters of the API process (usage); absent, they are reported as null. */
  counters?: LimiterCounters | undefined;
}

/** How a change appears in the audit trail: ids and settings only, never a key or personal data. */
export interface ActionAudit<I, O> {
  /** Stable dotted name, e.g. `integration.revoke`. */
  action: string;
  target?: (input: I) => readonly string[];
  details?: (input: I) => Record<string, unknown>;
  /** Ids and details known only once the action succeeded. */
  fromResult?: (result: O) => { target?: readonly string[]; details?: Record<string, unknown> };
}

export interface Action<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  /** `integrations.create`: the action's name in both surfaces. */
  name: string;
  summary: string;
  scope: ManageScope;
  input: I;
  output: O;
  /** Changes are audited; reads have none. */
  audit?: ActionAudit<Static<I>, Static<O>>;
  run(ctx: ManageContext, input: Static<I>): Promise<Static<O>>;
}

/** Declares an action; its schemas type its function. */
export function action<I extends TSchema, O extends TSchema>(spec: Action<I, O>): Action<I, O> {
  return spec;
}

/** An action with its types erased, as tables hold it. */
// biome-ignore lint/suspicious/noExplicitAny: a table holds actions of every input and output type
export type AnyAction = Action<any, any>;
