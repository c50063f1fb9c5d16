import { Type } from 'typebox';
import { ORGANIZATION_PLANS, TEAM_STATES } from '../schemas/enums.js';
import { Nullable, StringEnum } from '../schemas/helpers.js';
import { INTEGRATION_STATUSES } from '../write/commands/integration-state.js';
import { KEY_STATUSES } from '../write/commands/key-state.js';

// The schemas of the management plane's inputs and answers. Names and field spellings are those the
// `admin` command prints with --json, so the two surfaces answer the same values.

const description = (text: string) => ({ description: text });

/** An id the operator chose or the service drew: letters, digits, `_` and `-`. */
export const ManageId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_-]+$' });
/** A name shown to people. Shown escaped by the `admin` command, as text by the console. */
export const DisplayName = Type.String({ minLength: 1, maxLength: 200 });
export const Time = Type.String(description('ISO 8601 UTC time'));

export const Organization = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    plan: StringEnum(ORGANIZATION_PLANS),
    apiAgreed: Type.Boolean(description('API access agreed outside the plan')),
  },
  { $id: 'ManagedOrganization' },
);

export const Team = Type.Object(
  {
    id: Type.String(),
    name: Type.Optional(Nullable(Type.String())),
    organization: Nullable(Type.String()),
    state: StringEnum(TEAM_STATES),
    legalSetupDone: Type.Boolean(),
    sensitiveSector: Type.Boolean(),
    livemode: Type.Boolean(description('false: an example team, which sandbox switches may change')),
    holdsData: Type.Boolean(description('a lead exists, or the operator said the team holds data')),
  },
  { $id: 'ManagedTeam' },
);

export const Key = Type.Object({
  id: Type.String(description('the lookup id: the 12 characters after the prefix, never the secret')),
  last4: Type.String(),
  status: StringEnum(KEY_STATUSES),
  createdAt: Time,
  graceEndsAt: Nullable(Time),
  lastUsedAt: Type.Optional(Nullable(Time)),
  lastUsedFrom: Type.Optional(Nullable(Type.String(description('client address of the last use')))),
});

export const Integration = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    organization: Nullable(Type.String()),
    teams: Type.Array(Type.String()),
    allowlist: Type.Array(Type.String(), description('IPv4 addresses and CIDR ranges; empty: any address')),
    status: StringEnum(INTEGRATION_STATUSES),
    livemode: Type.Boolean(),
    createdAt: Time,
    revokedAt: Nullable(Time),
    keys: Type.Array(Key),
  },
  { $id: 'ManagedIntegration' },
);

export const CreatedIntegration = Type.Object({
  integration: Integration,
  key: Type.String(description('the secret key: shown in this answer only, never again')),
});

export const Rolled = Type.Object({
  integration: Type.String(),
  key: Type.String(description('the new secret key: shown in this answer only, never again')),
  keyId: Type.String(),
  last4: Type.String(),
  oldKeyId: Nullable(Type.String()),
  graceEndsAt: Nullable(Type.String(description('null: the old key was revoked at once'))),
});

export const Allowlist = Type.Object({ integration: Type.String(), allowlist: Type.Array(Type.String()) });

export const AllowlistCheck = Type.Object({
  integration: Type.String(),
  address: Type.String(),
  allowed: Type.Boolean(),
  /** The entry that lets the address in, when one does. */
  matchedBy: Nullable(Type.String(description('the entry that lets it in; null when the list is empty or none does'))),
});

export const Switches = Type.Object({
  apiDisabled: Type.Boolean(),
  capabilitiesDisabled: Type.Array(Type.String()),
});

export const AuditEntry = Type.Object({
  at: Time,
  actor: Type.String(),
  action: Type.String(),
  target: Type.Array(Type.String()),
  outcome: Type.String(description('ok, or the error code of the refusal')),
  details: Type.Record(Type.String(), Type.Unknown()),
});

export const Lockout = Type.Object({
  integration: Type.String(),
  key: Type.String(description('lookup id')),
  failures: Type.Integer(description('failed attempts counted in the current minute')),
  lockedUntil: Nullable(Time),
});

export const AddressLockout = Type.Object({
  address: Type.String(description('the client address, as the API saw it')),
  lockedUntil: Time,
});
