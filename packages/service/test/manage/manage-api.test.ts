import { createHash } from 'node:crypto';
import { Command } from 'commander';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { registerAdminCommands } from '../../src/cli/admin.js';
import { manageSurface } from '../../src/manage/api/manage-surface.js';
import type { Store } from '../../src/store/store.js';
import { runCommand } from '../../src/write/commands/commands.js';
import { seedOrganization, seedTeam } from '../access/fixtures.js';
import { type InternalHarness, internalHarness } from '../internal/internal-harness.js';
import { describeEachBackend } from '../support/backends.js';
import { captureOutput, releaseOutput } from '../support/captured-output.js';

// The management API (issue 28) and the `admin` command run the same actions (manage/): each action run
// both ways gives the same result. The API's bad inputs answer problem+json with a code (and a param).

/** Markup, a window-title escape, a screen clear and a right-to-left override. */
const HOSTILE = 'Beta <script>alert(1)</script>\u001b]0;owned\u0007\u001b[2J\u202e';

type Vars = { integration: string };
interface Step {
  rule: string;
  cli: (v: Vars) => string[];
  api: (v: Vars) => { method: 'GET' | 'POST'; url: string; body?: object };
  /** What the CLI prints of the API's answer (default: all of it). */
  pick?: (answer: unknown) => unknown;
  /** Remembers an id of the answer for the next steps. */
  keep?: (answer: unknown, v: Vars) => void;
}

const STEPS: Step[] = [
  { rule: 'teams list', cli: () => ['teams', 'list'], api: () => ({ method: 'GET', url: '/teams' }) },
  {
    rule: 'organizations create (a name holding markup and escapes is kept as given)',
    cli: () => ['orgs', 'create', HOSTILE, '--id', 'org_b', '--plan', 'no_api'],
    api: () => ({ method: 'POST', url: '/organizations', body: { name: HOSTILE, id: 'org_b', plan: 'no_api' } }),
  },
  { rule: 'organizations list', cli: () => ['orgs', 'list'], api: () => ({ method: 'GET', url: '/organizations' }) },
  {
    rule: 'organizations set plan',
    cli: () => ['orgs', 'set-plan', 'org_b', 'api_included', '--api-agreed', 'yes'],
    api: () => ({ method: 'POST', url: '/organizations/org_b/plan', body: { plan: 'api_included', apiAgreed: true } }),
  },
  {
    rule: 'teams set sector',
    cli: () => ['teams', 'set-sector', 'team_a2', 'yes'],
    api: () => ({ method: 'POST', url: '/teams/team_a2/sector', body: { sensitiveSector: true } }),
  },
  {
    rule: 'teams set legal',
    cli: () => ['teams', 'set-legal', 'team_a2', 'no'],
    api: () => ({ method: 'POST', url: '/teams/team_a2/legal', body: { legalSetupDone: false } }),
  },
  {
    rule: 'teams set organization',
    cli: () => ['teams', 'set-org', 'team_a2', 'org_b'],
    api: () => ({ method: 'POST', url: '/teams/team_a2/organization', body: { organization: 'org_b' } }),
  },
  {
    rule: 'teams set holds data',
    cli: () => ['teams', 'set-holds-data', 'team_a2', 'yes'],
    api: () => ({ method: 'POST', url: '/teams/team_a2/holds-data', body: { holdsData: true } }),
  },
  {
    rule: 'teams set state',
    cli: () => ['teams', 'set-state', 'team_a2', 'api_paused'],
    api: () => ({ method: 'POST', url: '/teams/team_a2/state', body: { state: 'api_paused' } }),
  },
  {
    rule: 'integrations create returns the key once',
    cli: () => ['integrations', 'create', '--teams', 'team_a1', '--name', 'Warehouse', '--allowlist', '192.0.2.0/24'],
    api: () => ({
      method: 'POST',
      url: '/integrations',
      body: { teams: ['team_a1'], name: 'Warehouse', allowlist: ['192.0.2.0/24'] },
    }),
    keep: (answer, v) => {
      v.integration = (answer as { integration: { id: string } }).integration.id;
    },
  },
  {
    rule: 'a refused create (eligibility) is the same refusal',
    cli: () => ['integrations', 'create', '--teams', 'team_a2', '--name', 'Paused'],
    api: () => ({ method: 'POST', url: '/integrations', body: { teams: ['team_a2'], name: 'Paused' } }),
  },
  {
    rule: 'integrations list',
    cli: () => ['integrations', 'list'],
    api: () => ({ method: 'GET', url: '/integrations' }),
  },
  {
    rule: 'the request log of an integration',
    cli: (v) => ['integrations', 'requests', v.integration, '--failed'],
    api: (v) => ({ method: 'GET', url: `/integrations/${v.integration}/requests?failed=true` }),
  },
  {
    rule: 'recent failures by code and endpoint',
    cli: () => ['failures'],
    api: () => ({ method: 'GET', url: '/failures' }),
  },
  {
    rule: 'allowlist add',
    cli: (v) => ['integrations', 'allowlist', 'add', v.integration, '198.51.100.7'],
    api: (v) => ({
      method: 'POST',
      url: `/integrations/${v.integration}/allowlist/add`,
      body: { entries: ['198.51.100.7'] },
    }),
  },
  {
    rule: 'allowlist remove',
    cli: (v) => ['integrations', 'allowlist', 'remove', v.integration, '192.0.2.0/24'],
    api: (v) => ({
      method: 'POST',
      url: `/integrations/${v.integration}/allowlist/remove`,
      body: { entries: ['192.0.2.0/24'] },
    }),
  },
  {
    rule: 'allowlist replace',
    cli: (v) => ['integrations', 'allowlist', 'set', v.integration, '203.0.113.0/24'],
    api: (v) => ({
      method: 'POST',
      url: `/integrations/${v.integration}/allowlist`,
      body: { entries: ['203.0.113.0/24'] },
    }),
  },
  {
    rule: 'allowlist check: would this address pass',
    cli: (v) => ['integrations', 'allowlist', 'check', v.integration, '203.0.113.9'],
    api: (v) => ({ method: 'GET', url: `/integrations/${v.integration}/allowlist/check?address=203.0.113.9` }),
  },
  {
    rule: 'roll with a grace of 1h',
    cli: (v) => ['integrations', 'roll', v.integration, '--grace', '1h'],
    api: (v) => ({ method: 'POST', url: `/integrations/${v.integration}/roll`, body: { grace: '1h' } }),
  },
  {
    rule: 'end the old key',
    cli: (v) => ['integrations', 'end-old-key', v.integration, '--yes'],
    api: (v) => ({ method: 'POST', url: `/integrations/${v.integration}/end-old-key` }),
  },
  {
    rule: 'switch the API off',
    cli: () => ['switches', 'api', 'off'],
    api: () => ({ method: 'POST', url: '/switches/api', body: { state: 'off' } }),
  },
  {
    rule: 'switch an endpoint off',
    cli: () => ['switches', 'capability', 'leads.list', 'off'],
    api: () => ({ method: 'POST', url: '/switches/capability', body: { endpoint: 'leads.list', state: 'off' } }),
  },
  { rule: 'switches list', cli: () => ['switches', 'list'], api: () => ({ method: 'GET', url: '/switches' }) },
  {
    rule: 'sandbox not ready on an example team',
    cli: () => ['sandbox', 'not-ready', '--team', 'team_x', '--for', '2m'],
    api: () => ({ method: 'POST', url: '/sandbox/team_x/not-ready', body: { for: '2m' } }),
  },
  {
    rule: 'sandbox refused on a live team',
    cli: () => ['sandbox', 'not-ready', '--team', 'team_a1'],
    api: () => ({ method: 'POST', url: '/sandbox/team_a1/not-ready' }),
  },
  {
    rule: 'revoke',
    cli: (v) => ['integrations', 'revoke', v.integration, '--yes'],
    api: (v) => ({ method: 'POST', url: `/integrations/${v.integration}/revoke` }),
  },
  {
    rule: 'a second revoke is not an error',
    cli: (v) => ['integrations', 'revoke', v.integration, '--yes'],
    api: (v) => ({ method: 'POST', url: `/integrations/${v.integration}/revoke` }),
  },
  {
    rule: 'a revoked integration cannot roll',
    cli: (v) => ['integrations', 'roll', v.integration],
    api: (v) => ({ method: 'POST', url: `/integrations/${v.integration}/roll` }),
  },
  {
    rule: 'audit trail with filters',
    cli: () => ['audit', 'list', '--action', 'integration'],
    api: () => ({ method: 'GET', url: '/audit?action=integration' }),
    pick: (answer) => (answer as { entries: unknown }).entries,
  },
];

/** Drops what differs between two runs by nature: drawn ids and keys, times, the actor. */
function normalized(value: unknown, v: Vars): unknown {
  const text = JSON.stringify(value)
    .replaceAll(v.integration || 'no integration yet', 'INTEGRATION')
    .replace(/crmx_live_[0-9A-Za-z]+/g, 'KEY')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, 'TIME')
    .replace(/"(id|keyId|oldKeyId|last4)":"[0-9A-Za-z]+"/g, '"$1":"X"')
    .replace(/"(keyIds|revoked|revokedKeyIds)":\[[^\]]*\]/g, '"$1":["X"]')
    .replace(/"(newKeyId)":"[0-9A-Za-z]+"/g, '"$1":"X"')
    .replace(/"actor":"[^"]*"/g, '"actor":"ACTOR"');
  return JSON.parse(text);
}

describeEachBackend('management API and admin command', (makeStore) => {
  let stores: Store[] = [];
  let h: InternalHarness;
  let out: string[];

  async function seeded(): Promise<Store> {
    const store = await makeStore();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    await seedTeam(store, 'team_a2', { organization: 'org_a' });
    await seedTeam(store, 'team_x', { organization: 'org_a', livemode: false });
    stores.push(store);
    return store;
  }

  beforeEach(() => {
    out = [];
    captureOutput((chunk) => out.push(chunk));
  });
  afterEach(async () => {
    releaseOutput();
    await h?.close();
    for (const store of stores) await store.close();
    stores = [];
  });

  /** `crm-export admin ... --json` on `store`: what it printed, parsed, and its exit code. */
  async function admin(store: Store, args: string[]): Promise<{ json: unknown; code: number }> {
    out = [];
    process.exitCode = 0;
    const program = new Command('crm-export').exitOverride();
    registerAdminCommands(program, async () => ({ store, close: async () => {} }));
    await program.parseAsync(['admin', ...args, '--json'], { from: 'user' });
    const code = Number(process.exitCode ?? 0);
    process.exitCode = 0;
    return { json: JSON.parse(out.join('')), code };
  }

  it('each action run through the admin command and through the API gives the same result', async () => {
    const cliStore = await seeded();
    const apiStore = await seeded();
    h = await internalHarness(apiStore, [manageSurface]);
    const token = await h.token('crm-settings', ['read', 'keys', 'operate']);
    const cliVars: Vars = { integration: '' };
    const apiVars: Vars = { integration: '' };
    for (const step of STEPS) {
      const cli = await admin(cliStore, step.cli(cliVars));
      const request = step.api(apiVars);
      const res = await h.inject({
        ...request,
        url: `/manage/v1${request.url}`,
        token,
        ...(request.body ? { body: request.body } : {}),
      });
      const answer = res.json();
      if (cli.code === 0) {
        expect(res.statusCode, step.rule).toBeLessThan(300);
        step.keep?.(cli.json, cliVars);
        step.keep?.(answer, apiVars);
        const api = step.pick ? step.pick(answer) : answer;
        expect(normalized(api, apiVars), step.rule).toEqual(normalized(cli.json, cliVars));
      } else {
        // The same refusal: the admin code is the problem's `reason`.
        expect(res.headers['content-type'], step.rule).toContain('application/problem+json');
        expect(answer.reason ?? answer.code, step.rule).toBe((cli.json as { error: { code: string } }).error.code);
      }
    }
    // The changes are in both audit trails alike; over the API the actor is the token's name.
    const trail = async (store: Store) => (await store.listAudit({ limit: 1000 })).map((e) => [e.action, e.outcome]);
    expect(await trail(apiStore)).toEqual(await trail(cliStore));
    expect(new Set((await apiStore.listAudit({ limit: 1000 })).map((e) => e.actor))).toEqual(new Set(['crm-settings']));
  });

  it('an organization name holding markup and terminal escapes is printed escaped by admin, kept as given by the API', async () => {
    const store = await seeded();
    h = await internalHarness(store, [manageSurface]);
    const token = await h.token('crm-settings', ['read', 'operate']);
    await h.inject({ method: 'POST', url: '/manage/v1/organizations', token, body: { name: HOSTILE, id: 'org_b' } });
    const listed = await h.inject({ method: 'GET', url: '/manage/v1/organizations', token });
    expect(listed.json().map((o: { name: string }) => o.name)).toContain(HOSTILE);
    out = [];
    const program = new Command('crm-export').exitOverride();
    registerAdminCommands(program, async () => ({ store, close: async () => {} }));
    await program.parseAsync(['admin', 'orgs', 'list'], { from: 'user' });
    const text = out.join('');
    expect(text).toContain('Beta <script>alert(1)</script>\\x1b]0;owned\\x07\\x1b[2J\\u202e');
    for (const raw of ['\u001b', '\u0007', '\u202e']) expect(text).not.toContain(raw);
  });

  it("an integration's usage answers this minute against the rate limit and today against the quota", async () => {
    const store = await seeded();
    h = await internalHarness(store, [manageSurface]);
    const token = await h.token('reader', ['read', 'keys']);
    const created = await h.inject({
      method: 'POST',
      url: '/manage/v1/integrations',
      token,
      body: { teams: ['team_a1'], name: 'W' },
    });
    const res = await h.inject({
      method: 'GET',
      url: `/manage/v1/integrations/${created.json().integration.id}/usage`,
      token,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ minute: { limit: expect.any(Number) }, today: { quota: expect.any(Number) } });
    expect(res.json().itemsPerHour).toHaveLength(24);
  });

  it('every change over the API records the token name as actor and the On-Behalf-Of user', async () => {
    const store = await seeded();
    h = await internalHarness(store, [manageSurface]);
    const token = await h.token('crm-settings', ['keys']);
    const res = await h.inject({
      method: 'POST',
      url: '/manage/v1/integrations',
      token,
      body: { teams: ['team_a1'], name: 'W' },
      headers: { 'on-behalf-of': 'jane@crm.example' },
    });
    expect(res.statusCode).toBe(201);
    const [entry] = await store.listAudit({ limit: 10, action: 'integration.create' });
    expect(entry).toMatchObject({ actor: 'crm-settings', outcome: 'ok', details: { onBehalfOf: 'jane@crm.example' } });
  });
});

describeEachBackend('management API: bad input', (makeStore) => {
  let store: Store;
  let h: InternalHarness;
  let admin: string;
  let integration: string;
  beforeEach(async () => {
    store = await makeStore();
    await seedOrganization(store, 'org_a');
    await seedTeam(store, 'team_a1', { organization: 'org_a' });
    h = await internalHarness(store, [manageSurface]);
    admin = await h.token('crm-settings', ['read', 'keys', 'operate']);
    const created = await h.inject({
      method: 'POST',
      url: '/manage/v1/integrations',
      token: admin,
      body: { teams: ['team_a1'], name: 'W' },
    });
    integration = created.json().integration.id;
  });
  afterEach(async () => {
    await h.close();
    await store.close();
  });

  const problem = (res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) => ({
    status: res.statusCode,
    ...(res.json() as object),
    contentType: String(res.headers['content-type']).split(';')[0],
  });

  it('a missing or wrong token is 401 invalid_token', async () => {
    const missing = await h.inject({ method: 'GET', url: '/manage/v1/integrations' });
    expect(problem(missing)).toMatchObject({
      status: 401,
      contentType: 'application/problem+json',
      code: 'invalid_token',
    });
    const wrong = `${admin.slice(0, -4)}${admin.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const refused = await h.inject({ method: 'GET', url: '/manage/v1/integrations', token: wrong });
    expect(problem(refused)).toMatchObject({ status: 401, code: 'invalid_token' });
  });

  it('a read token cannot revoke: 403 insufficient_scope, and the integration stays active', async () => {
    const reader = await h.token('reader', ['read']);
    const res = await h.inject({ method: 'POST', url: `/manage/v1/integrations/${integration}/revoke`, token: reader });
    expect(problem(res)).toMatchObject({ status: 403, code: 'insufficient_scope' });
    const read = await h.inject({ method: 'GET', url: `/manage/v1/integrations/${integration}`, token: reader });
    expect(read.json().status).toBe('active');
  });

  it('an Idempotency-Key replays the first answer for the same body and is 422 with another body', async () => {
    const body = { teams: ['team_a1'], name: 'Once' };
    const headers = { 'idempotency-key': 'create-once-7f3a' };
    const first = await h.inject({ method: 'POST', url: '/manage/v1/integrations', token: admin, body, headers });
    expect(first.statusCode).toBe(201);
    const again = await h.inject({ method: 'POST', url: '/manage/v1/integrations', token: admin, body, headers });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const other = await h.inject({
      method: 'POST',
      url: '/manage/v1/integrations',
      token: admin,
      body: { ...body, name: 'Twice' },
      headers,
    });
    expect(problem(other)).toMatchObject({ status: 422, code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    const listed = await h.inject({ method: 'GET', url: '/manage/v1/integrations', token: admin });
    expect(listed.json().filter((i: { name: string }) => i.name === 'Once')).toHaveLength(1);
    // The stored answer holds the key only sealed.
    const row = await runCommand(store, 'idempotency.claim', {
      row: { owner: 'crm-settings', key: sha256('create-once-7f3a'), digest: 'other', createdAt: Date.now() },
      expiredBefore: 0,
    });
    expect(row.claimed).toBe(false);
    if (!row.claimed) expect(row.row.answer).not.toContain(first.json().key);
  });

  it('an Idempotency-Key is kept 24 hours: after that the same key runs a new request', async () => {
    const headers = { 'idempotency-key': 'switch-1' };
    const url = '/manage/v1/switches/api';
    const off = await h.inject({ method: 'POST', url, token: admin, body: { state: 'off' }, headers });
    expect(off.json().apiDisabled).toBe(true);
    h.clock.advance(23 * 3_600_000);
    const early = await h.inject({ method: 'POST', url, token: admin, body: { state: 'on' }, headers });
    expect(problem(early)).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    h.clock.advance(2 * 3_600_000);
    const later = await h.inject({ method: 'POST', url, token: admin, body: { state: 'on' }, headers });
    expect(later.statusCode).toBe(200);
    expect(later.json().apiDisabled).toBe(false);
  });

  it('an Idempotency-Key whose first request is still running is 409 idempotency_key_in_use', async () => {
    const body = { entries: ['192.0.2.1'] };
    const url = `/manage/v1/integrations/${integration}/allowlist`;
    await runCommand(store, 'idempotency.claim', {
      row: {
        owner: 'crm-settings',
        key: sha256('busy-1'),
        digest: sha256(`POST ${url}\n${JSON.stringify(body)}`),
        createdAt: h.clock.now(),
      },
      expiredBefore: 0,
    });
    const res = await h.inject({ method: 'POST', url, token: admin, body, headers: { 'idempotency-key': 'busy-1' } });
    expect(problem(res)).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
  });

  it('a malformed allowlist entry is 400 invalid_request naming the entry', async () => {
    const res = await h.inject({
      method: 'POST',
      url: `/manage/v1/integrations/${integration}/allowlist`,
      token: admin,
      body: { entries: ['192.0.2.0/24', '300.1.2.3'] },
    });
    expect(problem(res)).toMatchObject({ status: 400, code: 'invalid_request', param: 'entries[1]' });
  });

  it('an unknown integration is 404 resource_missing', async () => {
    const res = await h.inject({ method: 'GET', url: '/manage/v1/integrations/prn_missing', token: admin });
    expect(problem(res)).toMatchObject({ status: 404, code: 'resource_missing', reason: 'not_found' });
  });

  it('a body over the limit is 413 body_too_large', async () => {
    const res = await h.inject({
      method: 'POST',
      url: '/manage/v1/organizations',
      token: admin,
      body: { name: 'x'.repeat(70_000) },
    });
    expect(problem(res)).toMatchObject({ status: 413, code: 'body_too_large' });
  });

  it('an unknown field is 400 invalid_request naming it', async () => {
    const res = await h.inject({
      method: 'POST',
      url: '/manage/v1/switches/api',
      token: admin,
      body: { state: 'off', x: 1 },
    });
    expect(problem(res)).toMatchObject({ status: 400, code: 'invalid_request', param: 'x' });
  });
});

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
