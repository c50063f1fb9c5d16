import { Type } from 'typebox';
import { ENDPOINT_NAMES } from '../../access/endpoints.js';
import {
  clearSandbox,
  holdNotReady,
  type IntegrationFault,
  parseDuration,
  refuseCursors,
  removeRecord,
  setTeamCapability,
  showSandbox,
  spendIntegration,
} from '../../access/sandbox.js';
import { readSwitches, setApiDisabled, setCapabilityDisabled } from '../../access/switches.js';
import { AdminError } from '../../errors/admin-error.js';
import type { REMOVAL_REASONS } from '../../schemas/enums.js';
import { StringEnum } from '../../schemas/helpers.js';
import type { AuditEntry, AuditQuery } from '../../store/store.js';
import { type Action, action } from '../action.js';
import { AuditEntry as AuditEntrySchema, ManageId, Switches } from '../schemas.js';

// The audit trail, the operator switches every API process reads, and the sandbox switches of example teams.

const yesNo = (value: boolean) => (value ? 'yes' : 'no');
const OnOff = StringEnum(['on', 'off'] as const);
const Endpoint = StringEnum(ENDPOINT_NAMES);
const Duration = Type.String({ minLength: 1, maxLength: 20, description: '30s, 5m, 2h (at most 7 days)' });

export const AUDIT_LIST_DEFAULT_LIMIT = 100;
export const AUDIT_LIST_MAX_LIMIT = 10_000;

export const listAuditAction = action({
  name: 'audit.list',
  summary: 'Audit trail entries, oldest first: the newest `limit` that match every filter (`all`: every one)',
  scope: 'read',
  input: Type.Object(
    {
      since: Type.Optional(Type.String({ description: 'entries at or after this ISO 8601 time' })),
      until: Type.Optional(Type.String({ description: 'entries before this ISO 8601 time' })),
      action: Type.Optional(Type.String({ maxLength: 100, description: 'an action, or every action under a prefix' })),
      actor: Type.Optional(Type.String({ maxLength: 100 })),
      target: Type.Optional(Type.String({ maxLength: 100 })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_LIST_MAX_LIMIT })),
      all: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
  output: Type.Object({
    entries: Type.Array(AuditEntrySchema),
    cut: Type.Boolean({ description: 'true: more entries match than `limit`; these are the newest' }),
  }),
  run: async ({ store }, i) => {
    if (i.all && i.limit !== undefined)
      throw new AdminError('invalid_argument', 'pass --all or --limit, not both', 'limit');
    const query: AuditQuery = { limit: i.all ? Number.MAX_SAFE_INTEGER : (i.limit ?? AUDIT_LIST_DEFAULT_LIMIT) };
    if (i.since !== undefined) query.since = isoTime('since', i.since);
    if (i.until !== undefined) query.until = isoTime('until', i.until);
    if (i.action !== undefined) query.action = i.action;
    if (i.actor !== undefined) query.actor = i.actor;
    if (i.target !== undefined) query.target = i.target;
    if (i.all) return { entries: await store.listAudit(query), cut: false };
    // One entry more than asked tells whether the list would be cut.
    const found: AuditEntry[] = await store.listAudit({ ...query, limit: query.limit + 1 });
    return found.length <= query.limit ? { entries: found, cut: false } : { entries: found.slice(1), cut: true };
  },
});

/** An ISO 8601 time normalized to the stored form (UTC, milliseconds). */
function isoTime(field: string, value: string): string {
  // A date and a time with a zone, or a date alone (UTC midnight): the forms Date parses the same everywhere.
  const shape = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;
  const ms = Date.parse(value);
  if (!shape.test(value) || Number.isNaN(ms))
    throw new AdminError('invalid_argument', `--${field} must be an ISO 8601 time, e.g. 2026-03-01T12:00:00Z`, field);
  return new Date(ms).toISOString();
}

export const readSwitchesAction = action({
  name: 'switches.get',
  summary: 'The operator switches',
  scope: 'read',
  input: Type.Object({}, { additionalProperties: false }),
  output: Switches,
  run: ({ store }) => readSwitches(store),
});

export const setApiSwitchAction = action({
  name: 'switches.api',
  summary: 'on: the API answers; off: every endpoint answers 503 api_disabled',
  scope: 'operate',
  input: Type.Object({ state: OnOff }, { additionalProperties: false }),
  output: Switches,
  audit: { action: 'switch.api', target: () => ['api'], details: (i) => ({ state: i.state }) },
  run: ({ store }, i) => setApiDisabled(store, i.state === 'off'),
});

export const setCapabilitySwitchAction = action({
  name: 'switches.capability',
  summary: 'off: the endpoint answers 403 capability_disabled for every team',
  scope: 'operate',
  input: Type.Object({ endpoint: Endpoint, state: OnOff }, { additionalProperties: false }),
  output: Switches,
  audit: { action: 'switch.capability', target: (i) => [i.endpoint], details: (i) => ({ state: i.state }) },
  run: ({ store }, i) => setCapabilityDisabled(store, i.endpoint, i.state === 'off'),
});

const TeamInput = Type.Object({ team: ManageId }, { additionalProperties: false });

function cursorRefusal(name: string, refusal: 'sync_cursor_expired' | 'resync_required', summary: string) {
  return action({
    name: `sandbox.${name}`,
    summary,
    scope: 'operate',
    input: TeamInput,
    output: Type.Object({ team: Type.String(), cursors: Type.String() }),
    audit: { action: `sandbox.${name}`, target: (i) => [i.team] },
    run: ({ store }, i) => refuseCursors(store, i.team, refusal),
  });
}

export const expireCursorsAction = cursorRefusal(
  'expire_cursors',
  'sync_cursor_expired',
  'Every feed cursor of the example team issued so far gets 410 sync_cursor_expired',
);
export const requireResyncAction = cursorRefusal(
  'require_resync',
  'resync_required',
  'Every feed cursor of the example team issued so far gets 409 resync_required',
);

export const notReadyAction = action({
  name: 'sandbox.not_ready',
  summary: "The example team's data answers 409 capture_not_ready for a while",
  scope: 'operate',
  input: Type.Object({ team: ManageId, for: Type.Optional(Duration) }, { additionalProperties: false }),
  output: Type.Object({ team: Type.String(), notReadyUntil: Type.String() }),
  audit: { action: 'sandbox.not_ready', target: (i) => [i.team], details: (i) => ({ for: i.for ?? '5m' }) },
  run: ({ store, clock }, i) => holdNotReady(store, clock, i.team, parseDuration(i.for ?? '5m')),
});

function spend(name: string, fault: IntegrationFault, summary: string) {
  return action({
    name: `sandbox.${name}`,
    summary,
    scope: 'operate',
    input: Type.Object(
      { team: ManageId, integration: ManageId, for: Type.Optional(Duration) },
      { additionalProperties: false },
    ),
    output: Type.Object({
      team: Type.String(),
      integration: Type.String(),
      fault: Type.String(),
      until: Type.String(),
    }),
    audit: {
      action: `sandbox.${name}`,
      target: (i) => [i.team, i.integration],
      details: (i) => (i.for === undefined ? {} : { for: i.for }),
    },
    run: ({ store, clock, limits }, i) =>
      spendIntegration(
        store,
        clock,
        limits,
        i.team,
        i.integration,
        fault,
        i.for === undefined ? undefined : parseDuration(i.for),
      ),
  });
}

export const spendRateAction = spend('spend_rate', 'rate_limited', "The integration's rate allowance is spent: 429");
export const spendQuotaAction = spend('spend_quota', 'quota_exceeded', "The integration's daily quota is spent: 429");
export const lockKeyAction = spend('lock_key', 'locked', "The integration's keys are locked out: 429 rate_limited");

export const teamCapabilityAction = action({
  name: 'sandbox.capability',
  summary: 'Switch an endpoint off (or back on) for the example team only',
  scope: 'operate',
  input: Type.Object({ team: ManageId, endpoint: Endpoint, off: Type.Boolean() }, { additionalProperties: false }),
  output: Type.Object({ team: Type.String(), capabilitiesOff: Type.Array(Type.String()) }),
  audit: {
    action: 'sandbox.capability',
    target: (i) => [i.team],
    details: (i) => ({ endpoint: i.endpoint, off: yesNo(i.off) }),
  },
  run: ({ store }, i) => setTeamCapability(store, i.team, i.endpoint, i.off),
});

function removal(how: (typeof REMOVAL_REASONS)[number]) {
  const name = how === 'erased' ? 'erase' : 'delete';
  return action({
    name: `sandbox.${name}`,
    summary: `${name === 'erase' ? 'Erase' : 'Delete'} one record of the example team through the write side`,
    scope: 'operate',
    input: Type.Object({ team: ManageId, record: ManageId }, { additionalProperties: false }),
    output: Type.Object({ team: Type.String(), record: Type.String(), removed: Type.String() }),
    audit: { action: `sandbox.${name}`, target: (i) => [i.team, i.record] },
    run: ({ store, clock }, i) => removeRecord(store, clock, i.team, i.record, how),
  });
}

export const eraseAction = removal('erased');
export const deleteAction = removal('deleted');

export const clearSandboxAction = action({
  name: 'sandbox.clear',
  summary: 'End every timed fault and endpoint switch of the example team (cursor refusals stay)',
  scope: 'operate',
  input: TeamInput,
  output: Type.Object({ team: Type.String(), integrations: Type.Array(Type.String()) }),
  audit: { action: 'sandbox.clear', target: (i) => [i.team], fromResult: (r) => ({ target: r.integrations }) },
  run: ({ store }, i) => clearSandbox(store, i.team),
});

export const showSandboxAction = action({
  name: 'sandbox.show',
  summary: 'The sandbox state of the example team and its integrations',
  scope: 'read',
  input: TeamInput,
  output: Type.Object({
    team: Type.String(),
    state: Type.Record(Type.String(), Type.Unknown()),
    integrations: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
  }),
  run: ({ store }, i) => showSandbox(store, i.team) as never,
});

export const OPERATE_ACTIONS: readonly Action[] = [
  listAuditAction,
  readSwitchesAction,
  setApiSwitchAction,
  setCapabilitySwitchAction,
  expireCursorsAction,
  requireResyncAction,
  notReadyAction,
  spendRateAction,
  spendQuotaAction,
  lockKeyAction,
  teamCapabilityAction,
  eraseAction,
  deleteAction,
  clearSandboxAction,
  showSandboxAction,
];
