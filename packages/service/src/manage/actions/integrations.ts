// Kept whole: each action on an integration, its keys and its allowlist, sharing one output shape and checks.
import ipaddr from 'ipaddr.js';
import { Type } from 'typebox';
import { allowlistAllows } from '../../access/allowlist.js';
import {
  changeAllowlist,
  createIntegration,
  getIntegration,
  listIntegrations,
  revokeIntegration,
} from '../../access/integrations.js';
import { endOldKey, rollKey } from '../../access/keys.js';
import { AdminError } from '../../errors/admin-error.js';
import { StringEnum } from '../../schemas/helpers.js';
import { normalizeAllowlistEntry } from '../../write/commands/allowlist-entries.js';
import type { IntegrationSummary } from '../../write/commands/integration-state.js';
import { GRACE_PERIODS } from '../../write/commands/key-state.js';
import { type Action, action, type ManageContext } from '../action.js';
import {
  AddressLockout,
  Allowlist,
  AllowlistCheck,
  CreatedIntegration,
  DisplayName,
  Integration,
  Lockout,
  ManageId,
  Rolled,
} from '../schemas.js';

// Integrations and their keys: create (the key is in that answer only), list and get (never a key), roll
// with a grace period or at once when compromised, end the old key, revoke, the allowlist, and lockouts.

const Entries = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 1000 });
const ById = Type.Object({ id: ManageId }, { additionalProperties: false });

/** Each entry in canonical form, or `invalid_argument` naming the entry at fault (`entries[2]`). */
function checkEntries(entries: readonly string[], field = 'entries'): void {
  entries.forEach((entry, i) => {
    try {
      normalizeAllowlistEntry(entry);
    } catch (error) {
      if (error instanceof AdminError) throw new AdminError(error.code, error.message, `${field}[${i}]`);
      throw error;
    }
  });
}

/** Adds when and from where each key was last used, when the context knows. */
async function withLastUse(ctx: ManageContext, list: IntegrationSummary[]): Promise<IntegrationSummary[]> {
  if (!ctx.lastUse) return list;
  const uses = await ctx.lastUse(list.flatMap((i) => i.keys.map((k) => k.id)));
  return list.map((i) => ({
    ...i,
    keys: i.keys.map((k) => ({
      ...k,
      lastUsedAt: uses.get(k.id)?.at ?? null,
      lastUsedFrom: uses.get(k.id)?.address ?? null,
    })),
  }));
}

export const listIntegrationsAction = action({
  name: 'integrations.list',
  summary: 'List integrations with their keys (never a key itself)',
  scope: 'read',
  input: Type.Object(
    { parent: Type.Optional(ManageId) },
    { additionalProperties: false, description: 'parent: an organization, or a team outside one' },
  ),
  output: Type.Array(Integration),
  run: async (ctx, i) => withLastUse(ctx, await listIntegrations(ctx.store, ctx.clock, i.parent)),
});

export const getIntegrationAction = action({
  name: 'integrations.get',
  summary: 'One integration with its keys (never a key itself)',
  scope: 'read',
  input: ById,
  output: Integration,
  run: async (ctx, i) =>
    (await withLastUse(ctx, [await getIntegration(ctx.store, ctx.clock, i.id)]))[0] as IntegrationSummary,
});

export const createIntegrationAction = action({
  name: 'integrations.create',
  summary: 'Create an integration; the answer holds its key, shown this once',
  scope: 'keys',
  input: Type.Object(
    {
      teams: Type.Array(ManageId, { minItems: 1, maxItems: 100 }),
      name: DisplayName,
      allowlist: Type.Optional(Entries),
    },
    { additionalProperties: false },
  ),
  output: CreatedIntegration,
  audit: {
    action: 'integration.create',
    details: (i) => ({ name: i.name, teams: i.teams, allowlist: i.allowlist ?? [] }),
    // The key's lookup id (shown by `list`), never the key.
    fromResult: ({ integration }) => ({
      target: [integration.id],
      details: { keyIds: integration.keys.map((k) => k.id) },
    }),
  },
  run: async ({ store, clock, limits }, i) => {
    checkEntries(i.allowlist ?? [], 'allowlist');
    return createIntegration(store, clock, { teams: i.teams, name: i.name, allowlist: i.allowlist ?? [], limits });
  },
});

export const rollKeyAction = action({
  name: 'integrations.roll',
  summary: 'Roll the key: the old one works during its grace, or is revoked at once when compromised',
  scope: 'keys',
  input: Type.Object(
    {
      id: ManageId,
      grace: Type.Optional(StringEnum(GRACE_PERIODS)),
      compromised: Type.Optional(Type.Boolean({ description: 'the old key leaked: revoke it now' })),
    },
    { additionalProperties: false },
  ),
  output: Rolled,
  audit: {
    action: 'integration.roll',
    target: (i) => [i.id],
    details: (i) => ({ grace: i.grace ?? '24h', compromised: i.compromised ?? false }),
    fromResult: (r) => ({ details: { newKeyId: r.keyId, oldKeyId: r.oldKeyId, oldKeyGraceEndsAt: r.graceEndsAt } }),
  },
  run: async ({ store, clock }, i) => ({
    integration: i.id,
    ...(await rollKey(store, clock, i.id, { grace: i.grace ?? '24h', compromised: i.compromised ?? false })),
  }),
});

export const endOldKeyAction = action({
  name: 'integrations.end_old_key',
  summary: 'End the grace period of the old key now (irreversible)',
  scope: 'keys',
  input: ById,
  output: Type.Object({ revoked: Type.Array(Type.String()) }),
  audit: {
    action: 'integration.end_old_key',
    target: (i) => [i.id],
    fromResult: (r) => ({ details: { revokedKeyIds: r.revoked } }),
  },
  run: ({ store, clock }, i) => endOldKey(store, clock, i.id),
});

export const revokeIntegrationAction = action({
  name: 'integrations.revoke',
  summary: 'Revoke the integration and all its keys (irreversible; revoking again changes nothing)',
  scope: 'keys',
  input: ById,
  output: Integration,
  audit: { action: 'integration.revoke', target: (i) => [i.id] },
  run: async ({ store, clock }, i) => {
    const current = await getIntegration(store, clock, i.id);
    // A second revoke is no error: the integration is revoked, as asked.
    if (current.status === 'revoked') return current;
    try {
      return await revokeIntegration(store, clock, i.id);
    } catch (error) {
      // Revoked meanwhile by another caller: the same outcome.
      if (error instanceof AdminError && error.code === 'integration_revoked')
        return getIntegration(store, clock, i.id);
      throw error;
    }
  },
});

export const getAllowlistAction = action({
  name: 'allowlist.get',
  summary: "An integration's allowlist (empty: any address)",
  scope: 'read',
  input: ById,
  output: Allowlist,
  run: async ({ store, clock }, i) => ({
    integration: i.id,
    allowlist: (await getIntegration(store, clock, i.id)).allowlist,
  }),
});

const AllowlistChange = Type.Object({ id: ManageId, entries: Entries }, { additionalProperties: false });

function allowlistChange(verb: 'set' | 'add' | 'remove', summary: string) {
  return action({
    name: `allowlist.${verb}`,
    summary,
    scope: 'keys',
    input: AllowlistChange,
    output: Allowlist,
    audit: {
      action: `allowlist.${verb}`,
      target: (i) => [i.id],
      details: (i) => ({ entries: i.entries }),
      fromResult: (r) => ({ details: { allowlist: r.allowlist } }),
    },
    run: async ({ store, limits }, i) => {
      checkEntries(i.entries);
      return { integration: i.id, allowlist: await changeAllowlist(store, i.id, verb, i.entries, limits) };
    },
  });
}

export const setAllowlistAction = allowlistChange('set', 'Replace the allowlist (empty: any address)');
export const addAllowlistAction = allowlistChange('add', 'Add entries to the allowlist');
export const removeAllowlistAction = allowlistChange('remove', 'Remove entries from the allowlist');

export const checkAllowlistAction = action({
  name: 'allowlist.check',
  summary: 'Would a request from this address pass the allowlist?',
  scope: 'read',
  input: Type.Object(
    { id: ManageId, address: Type.String({ minLength: 1, maxLength: 64 }) },
    { additionalProperties: false },
  ),
  output: AllowlistCheck,
  run: async ({ store, clock }, i) => {
    if (!ipaddr.isValid(i.address))
      throw new AdminError('invalid_argument', `not an IP address: ${i.address}`, 'address');
    const { allowlist } = await getIntegration(store, clock, i.id);
    const allowed = allowlistAllows(allowlist, i.address);
    const matchedBy = allowed ? (allowlist.find((entry) => allowlistAllows([entry], i.address)) ?? null) : null;
    return { integration: i.id, address: i.address, allowed, matchedBy };
  },
});

/** The lockout counters, or a refusal saying they are out of reach here. */
function lockoutsOf(ctx: ManageContext) {
  if (!ctx.lockouts)
    throw new AdminError(
      'invalid_argument',
      'lockouts live in each API process (no REDIS_URL): read them through the management API of that process',
    );
  return ctx.lockouts;
}

export const listLockoutsAction = action({
  name: 'lockouts.list',
  summary: "Failed attempts and lockouts of the integrations' keys",
  scope: 'read',
  input: Type.Object({ integration: Type.Optional(ManageId) }, { additionalProperties: false }),
  output: Type.Array(Lockout),
  run: async (ctx, i) => {
    const lockouts = lockoutsOf(ctx);
    const list = i.integration
      ? [await getIntegration(ctx.store, ctx.clock, i.integration)]
      : await listIntegrations(ctx.store, ctx.clock);
    const out = [];
    for (const integration of list) {
      for (const key of integration.keys) {
        if (key.status === 'revoked' || key.status === 'expired') continue;
        out.push({ integration: integration.id, key: key.id, ...(await lockouts.keyStatus(key.id)) });
      }
    }
    return out;
  },
});

export const listAddressLockoutsAction = action({
  name: 'lockouts.addresses',
  summary: 'Client addresses locked out after failed authentication, and until when',
  scope: 'read',
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Array(AddressLockout),
  run: async (ctx) => lockoutsOf(ctx).lockedAddresses(),
});

export const unlockAction = action({
  name: 'lockouts.unlock',
  summary: 'End the lockout of a key (by lookup id) or of a client address',
  scope: 'keys',
  input: Type.Object(
    {
      key: Type.Optional(Type.String({ pattern: '^[0-9A-Za-z]{12}$' })),
      address: Type.Optional(Type.String({ maxLength: 64 })),
    },
    { additionalProperties: false },
  ),
  output: Type.Object({
    key: Type.Union([Type.String(), Type.Null()]),
    address: Type.Union([Type.String(), Type.Null()]),
  }),
  audit: {
    action: 'lockout.unlock',
    target: (i) => [...(i.key ? [i.key] : []), ...(i.address ? [i.address] : [])],
  },
  run: async (ctx, i) => {
    if (!i.key && !i.address) throw new AdminError('invalid_argument', 'name a key or an address', 'key');
    if (i.address && !ipaddr.isValid(i.address))
      throw new AdminError('invalid_argument', `not an IP address: ${i.address}`, 'address');
    const lockouts = lockoutsOf(ctx);
    if (i.key) await lockouts.unlockKey(i.key);
    if (i.address) await lockouts.unlockAddress(ipaddr.process(i.address).toString());
    return { key: i.key ?? null, address: i.address ?? null };
  },
});

export const INTEGRATION_ACTIONS: readonly Action[] = [
  listIntegrationsAction,
  getIntegrationAction,
  createIntegrationAction,
  rollKeyAction,
  endOldKeyAction,
  revokeIntegrationAction,
  getAllowlistAction,
  setAllowlistAction,
  addAllowlistAction,
  removeAllowlistAction,
  checkAllowlistAction,
  listLockoutsAction,
  listAddressLockoutsAction,
  unlockAction,
];
