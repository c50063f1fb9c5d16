import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { iso, systemClock } from '../clock.js';
import { AdminError } from '../errors/admin-error.js';
import type { Store } from '../store/store.js';
import { runCommand } from '../write/commands/commands.js';
import type { Action, ActionAudit, Actor, ManageContext } from './action.js';

// Runs one action the same way for the `admin` command and the management API: the input is checked
// against the action's schema, the action runs, and a change is recorded in the audit trail right after,
// with its outcome (`ok`, or the refusal's error code), the actor and the person it acted for.

/** The outcome of `perform`: the result, and whether its audit entry was written. */
export interface Performed<T> {
  result: T;
  /** False when the change was made but the audit trail could not record it. */
  recorded: boolean;
}

const checkers = new WeakMap<TSchema, ReturnType<typeof Compile>>();

/** Checks `input` against `schema`: `invalid_argument` naming the first field at fault. */
export function checkInput<S extends TSchema>(schema: S, input: unknown): Static<S> {
  let checker = checkers.get(schema);
  if (!checker) {
    checker = Compile(schema);
    checkers.set(schema, checker);
  }
  if (checker.Check(input)) return input as Static<S>;
  const [first] = checker.Errors(input);
  const param = fieldName(first?.instancePath ?? '', first?.params as Record<string, unknown> | undefined);
  throw new AdminError('invalid_argument', `${param ?? 'input'}: ${first?.message ?? 'not valid'}`, param);
}

/** `/entries/2` as `entries[2]`; a missing or unknown property by its name. */
function fieldName(path: string, params: Record<string, unknown> | undefined): string | undefined {
  const parts = path.split('/').filter((p) => p.length > 0);
  const extra = params?.additionalProperties ?? params?.additionalProperty ?? params?.requiredProperties;
  const named = Array.isArray(extra) ? extra[0] : typeof extra === 'string' ? extra : undefined;
  if (typeof named === 'string') parts.push(named);
  if (parts.length === 0) return undefined;
  return parts.reduce((name, part) => (/^\d+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), '');
}

/** Runs `action` on `input` and records a change in the audit trail. Refusals are recorded, then rethrown. */
export async function perform<I extends TSchema, O extends TSchema>(
  ctx: ManageContext,
  action: Action<I, O>,
  input: unknown,
): Promise<Performed<Static<O>>> {
  let checked: Static<I> | undefined;
  let result: Static<O>;
  try {
    const valid = checkInput(action.input, input);
    checked = valid;
    result = await action.run(ctx, valid);
  } catch (error) {
    if (action.audit) {
      const outcome = error instanceof AdminError ? error.code : 'failed';
      await recordAudit(ctx.store, ctx.actor, action.audit, checked ?? (input as Static<I>), outcome).catch(() => {});
    }
    throw error;
  }
  if (!action.audit) return { result, recorded: true };
  const recorded = await recordAudit(ctx.store, ctx.actor, action.audit, checked as Static<I>, 'ok', result).then(
    () => true,
    () => false,
  );
  return { result, recorded };
}

/**
 * Records a refusal that happened before the action could run (an argument the command line could not read),
 * under the action's audit name with the ids known so far.
 */
export async function recordRefusal(
  store: Store,
  actor: Actor,
  action: Action,
  target: readonly string[],
  code: string,
): Promise<void> {
  if (!action.audit) return;
  await recordAudit(store, actor, { action: action.audit.action, target: () => target }, {}, code).catch(() => {});
}

async function recordAudit<I, O>(
  store: Store,
  actor: Actor,
  audit: ActionAudit<I, O>,
  input: I | undefined,
  outcome: string,
  result?: O,
): Promise<void> {
  const safe = <T>(read: ((value: I) => T) | undefined): T | undefined => {
    if (!read || input === undefined || input === null) return undefined;
    try {
      return read(input);
    } catch {
      // An input the schema refused may lack what the audit reads: the entry keeps what it can.
      return undefined;
    }
  };
  const extra = result !== undefined && audit.fromResult ? audit.fromResult(result) : {};
  const details: Record<string, unknown> = { ...safe(audit.details), ...extra.details };
  if (actor.onBehalfOf !== undefined) details.onBehalfOf = actor.onBehalfOf;
  await runCommand(store, 'audit.append', {
    at: iso(systemClock.now()),
    actor: actor.name,
    action: audit.action,
    target: [...new Set([...(safe(audit.target) ?? []), ...(extra.target ?? [])])],
    outcome,
    details,
  });
}
