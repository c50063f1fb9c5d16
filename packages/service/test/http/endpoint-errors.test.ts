import { Value } from 'typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EndpointName } from '../../src/access/endpoints.js';
import { setApiDisabled, setCapabilityDisabled } from '../../src/access/switches.js';
import { COMMON_ERRORS, ERROR_CATALOGUE, type ErrorCode } from '../../src/errors/catalogue.js';
import type { Endpoint } from '../../src/http/endpoint.js';
import { endpointErrors } from '../../src/http/endpoint-errors.js';
import { ENDPOINTS } from '../../src/http/endpoints.js';
import { NAMED_SCHEMAS } from '../../src/http/openapi.js';
import { openapiDocument } from '../../src/http/openapi-document.js';
import { EXAMPLE_ANSWERS } from '../../src/schemas/generated/examples.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { seedOrganization, seedTeam } from '../access/fixtures.js';
import { type AccessHarness, accessHarness, putPlainRecords } from '../access/http-harness.js';

// The error codes each endpoint documents (endpoint-errors.ts, from its declaration) held against the
// contract's per-endpoint lists, against OpenAPI, and against what the endpoints answer when each refusal
// the harness can arrange is arranged.

const TEAM = ['team_required', 'team_not_accessible', 'team_state_restricted', 'sector_restricted'] as const;
const RECORD = ['resource_missing', 'team_state_restricted', 'sector_restricted'] as const;

/** The contract's own lists ("### GET /v1/..." sections); an endpoint it gives none for is absent. */
const CONTRACT: Partial<Record<EndpointName, readonly ErrorCode[]>> = {
  me: COMMON_ERRORS,
  'teams.list': [...COMMON_ERRORS, 'quota_exceeded'],
  'teams.get': [...COMMON_ERRORS, ...RECORD],
  'members.list': [...COMMON_ERRORS, ...TEAM, 'capture_not_ready', 'quota_exceeded'],
  'booking_services.list': [...COMMON_ERRORS, ...TEAM, 'capture_not_ready', 'quota_exceeded'],
  'boards.list': [...COMMON_ERRORS, ...TEAM, 'capture_not_ready', 'quota_exceeded'],
  'calls.list': [...COMMON_ERRORS, 'team_required', 'invalid_request', 'team_not_accessible'],
  'calls.get': [...COMMON_ERRORS, 'resource_missing'],
  // Named in its text only.
  'leads.get': ['resource_missing'],
  'sync.changes': [
    ...COMMON_ERRORS,
    ...TEAM,
    'resync_required',
    'capture_not_ready',
    'sync_cursor_expired',
    'quota_exceeded',
  ],
};

const LIST = [...COMMON_ERRORS, ...TEAM, 'capture_not_ready', 'quota_exceeded'] as const;
const SINGLE = [...COMMON_ERRORS, ...RECORD] as const;

/** What each endpoint documents, in this test's own words. */
const EXPECTED: Record<EndpointName, readonly ErrorCode[]> = {
  // No key: no key, scope, address, team or charge refusal; the firewall answers a flooding address.
  health: ['invalid_request', 'capability_disabled', 'internal_error', 'api_disabled', 'service_unavailable'],
  me: COMMON_ERRORS,
  'teams.list': [...COMMON_ERRORS, 'quota_exceeded'],
  'teams.get': SINGLE,
  'members.list': LIST,
  'booking_services.list': LIST,
  'boards.list': LIST,
  'leads.list': LIST,
  // The contract's list for /calls leaves out what the same binding and charge answer on /members.
  'calls.list': LIST,
  'conversations.list': LIST,
  'bookings.list': LIST,
  'leads.get': SINGLE,
  // The contract's list for /calls/{id} leaves out the team refusals /teams/{id} lists for the same binding.
  'calls.get': SINGLE,
  'conversations.get': SINGLE,
  'bookings.get': SINGLE,
  'leads.activities': [...SINGLE, 'quota_exceeded'],
  // Search does not count toward the daily quota.
  'leads.search': [...COMMON_ERRORS, ...TEAM, 'capture_not_ready'],
  'sync.changes': [...LIST, 'resync_required', 'sync_cursor_expired'],
};

const sorted = (codes: readonly ErrorCode[]) => [...new Set(codes)].sort();

describe('the error codes each endpoint documents', () => {
  it('are the contract list of the endpoint where it gives one, and what this test expects for each', () => {
    for (const endpoint of ENDPOINTS) {
      const documented = endpointErrors(endpoint);
      expect(sorted(documented), endpoint.name).toEqual(sorted(EXPECTED[endpoint.name]));
      const contract = CONTRACT[endpoint.name] ?? [];
      expect(
        contract.filter((code) => !documented.includes(code)),
        endpoint.name,
      ).toEqual([]);
    }
  });

  it('an endpoint declares as its own only codes nothing else of its declaration implies', () => {
    for (const endpoint of ENDPOINTS.filter((e) => e.errors)) {
      const derived = endpointErrors({ ...endpoint, errors: [] });
      expect(
        endpoint.errors?.filter((code) => derived.includes(code)),
        endpoint.name,
      ).toEqual([]);
    }
  });

  it('OpenAPI has one problem answer per status with its codes, an example body of each, and an example 200', async () => {
    const document = (await openapiDocument()) as {
      paths: Record<string, Record<string, { operationId: string; responses: Record<string, Response> }>>;
      components: { examples: Record<string, { value: { code: string; status: number } }> };
    };
    type Response = {
      description: string;
      content: Record<
        string,
        { schema: { $ref: string }; example?: unknown; examples?: object; 'x-error-codes'?: string[] }
      >;
    };
    const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
    for (const endpoint of ENDPOINTS) {
      const operation = operations.find((o) => o.operationId === endpoint.name);
      const { 200: ok, ...errors } = operation?.responses ?? {};
      expect(ok?.content['application/json']?.example, endpoint.name).toEqual(EXAMPLE_ANSWERS[endpoint.name]);
      const listed: string[] = [];
      for (const [status, response] of Object.entries(errors)) {
        const problem = response.content['application/problem+json'];
        const codes = problem?.['x-error-codes'] ?? [];
        expect(problem?.schema.$ref).toBe('#/components/schemas/Problem');
        for (const code of codes) {
          expect(ERROR_CATALOGUE[code as ErrorCode].status, code).toBe(Number(status));
          expect(response.description).toContain(`\`${code}\``);
          expect(document.components.examples[code]?.value).toMatchObject({ code, status: Number(status) });
        }
        expect(Object.keys(problem?.examples ?? {})).toEqual(codes);
        listed.push(...codes);
      }
      expect(listed, endpoint.name).toEqual(endpointErrors(endpoint));
    }
  });

  it("every endpoint's example answer has its response schema (run scripts/generate-examples.ts when this fails)", () => {
    const named = new Map(NAMED_SCHEMAS.map((s) => [(s as { $id?: string }).$id, s]));
    for (const endpoint of ENDPOINTS) {
      const example = EXAMPLE_ANSWERS[endpoint.name] as { data?: unknown[] };
      const schema = endpoint.response as { properties?: { data?: { items?: { $ref?: string } } } };
      const itemRef = schema.properties?.data?.items?.$ref;
      if (!itemRef) {
        expect(Value.Check(endpoint.response, example), endpoint.name).toBe(true);
        continue;
      }
      // A list envelope refers to its named record: the envelope and each item are checked apart.
      const item = named.get(itemRef.replace(/#$/, ''));
      expect(item, endpoint.name).toBeDefined();
      expect(example.data?.length, endpoint.name).toBeGreaterThan(0);
      for (const record of example.data ?? []) expect(Value.Check(item!, record), endpoint.name).toBe(true);
      const envelope = { ...schema, properties: { ...schema.properties, data: { type: 'array' } } };
      expect(Value.Check(envelope as never, example), endpoint.name).toBe(true);
    }
  });
});

/** Record ids per endpoint and team: team_a1 prepared, team_a2 not yet, team_solo not read by the key. */
const RECORDS = { lead: 'lead', call: 'call', conversation: 'conv', booking: 'bkg' } as const;
const TEAM_SUFFIX = { team_a1: 'A1', team_a2: 'A2', team_solo: 'S1' } as const;
type HarnessTeam = keyof typeof TEAM_SUFFIX;

function recordId(endpoint: Endpoint, team: HarnessTeam | 'none'): string {
  if (endpoint.name === 'teams.get') return team === 'none' ? 'team_nothing' : team;
  const kind = endpoint.name.startsWith('leads.') ? 'lead' : (endpoint.name.split('.')[0]?.slice(0, -1) ?? '');
  const prefix = RECORDS[kind as keyof typeof RECORDS];
  return `${prefix}_${team === 'none' ? 'nothing' : TEAM_SUFFIX[team]}`;
}

describe('the codes the endpoints answer', () => {
  let h: AccessHarness;
  const provoked = new Map<EndpointName, Set<string>>(ENDPOINTS.map((e) => [e.name, new Set()]));
  const outside: string[] = [];

  beforeAll(async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    h = await accessHarness(store, { keyCacheMs: 0 });
    // Not prepared yet: what capture answers.
    await seedTeam(store, 'team_a2', { organization: 'org_a', capturedAt: null } as never);
    for (const team of Object.keys(TEAM_SUFFIX) as HarnessTeam[]) {
      for (const [kind, prefix] of Object.entries(RECORDS)) {
        await putPlainRecords(store, kind as keyof typeof RECORDS, team, [`${prefix}_${TEAM_SUFFIX[team]}`]);
      }
    }
  });
  afterAll(async () => {
    await h.app.close();
    h.access.close();
    await h.store.close();
  });

  /** Sends a request to every endpoint; each problem's code is noted, and noted apart if undocumented. */
  async function everyEndpoint(
    options: { key?: string | undefined; team?: HarnessTeam | 'none'; query?: string; origin?: boolean } = {},
  ) {
    for (const endpoint of ENDPOINTS) {
      const team = options.team ?? 'team_a1';
      const headers: Record<string, string> = {};
      if ('key' in options ? options.key !== undefined : true) headers.authorization = options.key ?? h.key;
      if (endpoint.team.from === 'header' && team !== 'none') headers['service-team'] = team;
      if (options.origin) headers.origin = 'https://app.example.test';
      const path = endpoint.url.replace(':id', recordId(endpoint, team));
      const answer = await h.app.inject({
        method: endpoint.method,
        url: options.query ? `${path}?${options.query}` : path,
        headers,
        remoteAddress: '192.0.2.10',
        ...(endpoint.body ? { payload: { email: 'ada@example.test' } } : {}),
      });
      if (answer.statusCode < 400) continue;
      const code = (answer.json() as { code: ErrorCode }).code;
      provoked.get(endpoint.name)?.add(code);
      if (!endpointErrors(endpoint).includes(code)) outside.push(`${endpoint.name} ${answer.statusCode} ${code}`);
    }
  }

  it('every code an endpoint answers is one it documents, and each documented code the harness can cause is answered', async () => {
    await everyEndpoint({ key: undefined });
    await everyEndpoint({ key: 'Bearer crmx_live_nope' });
    await everyEndpoint({ origin: true });
    await everyEndpoint({ query: 'unknown=1' });
    await everyEndpoint({ team: 'none' });
    await everyEndpoint({ team: 'team_solo' });
    await everyEndpoint({ team: 'team_a2' });
    for (const [state, refusal] of [
      [{ state: 'disabled' }, 'team_state_restricted'],
      [{ sensitiveSector: true }, 'sector_restricted'],
    ] as const) {
      await seedTeam(h.store, 'team_a1', { organization: 'org_a', ...state });
      await everyEndpoint();
      expect(provoked.get('members.list')?.has(refusal)).toBe(true);
    }
    await seedOrganization(h.store, 'org_a', { plan: 'none' } as never);
    await everyEndpoint();
    await seedOrganization(h.store, 'org_a');
    await seedTeam(h.store, 'team_a1', { organization: 'org_a' });
    for (const endpoint of ENDPOINTS) await setCapabilityDisabled(h.store, endpoint.name, true);
    await everyEndpoint();
    for (const endpoint of ENDPOINTS) await setCapabilityDisabled(h.store, endpoint.name, false);
    await setApiDisabled(h.store, true);
    await everyEndpoint();
    await setApiDisabled(h.store, false);
    // The first answer counted spends a quota of one item; every endpoint counted after it is refused.
    await h.rebuild({ keyCacheMs: 0, dailyItemQuota: 1 });
    await everyEndpoint();
    await everyEndpoint();
    await h.rebuild({ keyCacheMs: 0, itemsPerMinute: 1, readRequestsPerMinute: 1 });
    await everyEndpoint();
    await everyEndpoint();

    expect(outside).toEqual([]);
    // Left to their own tests: a key rolled or out of its allowlist, a scope no key lacks, database faults and
    // bugs, and the feed's cursor refusals (test/feed/).
    const elsewhere = new Set<string>([
      'key_expired',
      'ip_not_allowed',
      'insufficient_scope',
      'internal_error',
      'service_unavailable',
      'resync_required',
      'sync_cursor_expired',
    ]);
    for (const endpoint of ENDPOINTS) {
      // Only an endpoint that reads a team refuses one for its plan.
      const documented = endpointErrors(endpoint).filter(
        (code) => !elsewhere.has(code) && (code !== 'plan_not_entitled' || endpoint.team.from !== 'none'),
      );
      expect(sorted(documented.filter((code) => !provoked.get(endpoint.name)?.has(code))), endpoint.name).toEqual([]);
    }
  });
});
