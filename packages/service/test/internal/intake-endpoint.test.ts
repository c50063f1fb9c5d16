import { afterEach, expect, it } from 'vitest';
import { createIntegration } from '../../src/access/integrations.js';
import { intakeSurface } from '../../src/internal/intake/intake-surface.js';
import { Metrics } from '../../src/metrics/metrics.js';
import type { Store } from '../../src/store/store.js';
import { StoreUnavailableError } from '../../src/store/unavailable.js';
import type { CrmEvent } from '../../src/write/events/events.js';
import { describeEachBackend } from '../support/backends.js';
import { newLead, T0, TEAM, type World, world } from '../write/events/fixture.js';
import { type InternalHarness, internalHarness } from './internal-harness.js';

// POST /intake/v1/batches and GET /intake/v1/sources/{source} (issue 27): every bad input answers
// problem+json naming the place at fault and never its value; a 200 comes after the commit and lists
// every event.

const renamed = (lead: string, name: string, id?: string) =>
  ({ type: 'lead.updated', at: T0, lead, name, ...(id ? { id } : {}) }) as CrmEvent;
/** Events with their seq, as the wire carries them. */
const wire = (first: number, events: CrmEvent[]) => events.map((event, i) => ({ seq: first + i, ...event }));

describeEachBackend('intake endpoint', (makeStore) => {
  let w: World;
  let h: InternalHarness;
  let token: string;
  afterEach(async () => {
    await h?.close();
    await w?.store.close();
  });
  /** Set to make every later write transaction fail as the database would. */
  const fault: { reason: 'busy' | 'connection_lost' | null } = { reason: null };
  let metrics: Metrics;
  const open = async (limits = {}) => {
    fault.reason = null;
    w = await world(makeStore);
    metrics = new Metrics({ processMetrics: false });
    h = await internalHarness(failingWrites(w.store, fault), [intakeSurface], limits, metrics);
    token = await h.token('crm-relay', ['intake']);
  };
  const post = (body: unknown, as = token) =>
    h.inject({ method: 'POST', url: '/intake/v1/batches', token: as, body: body as object });
  const position = async (source = 'crm') =>
    (await h.inject({ url: `/intake/v1/sources/${source}`, token })).json() as { last_seq: number };
  const name = async (lead: string) => (await w.record('lead', lead))?.name;

  it('answers after the commit with one result per event, in order, and moves the source', async () => {
    await open();
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1'), renamed('lead_1', 'Ada', 'e-2')]) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      source: 'crm',
      last_seq: 2,
      results: [
        { seq: 1, outcome: 'applied' },
        { seq: 2, id: 'e-2', outcome: 'applied' },
      ],
    });
    expect(await name('lead_1')).toBe('Ada');
    const source = await h.inject({ url: '/intake/v1/sources/crm', token });
    expect(source.json()).toMatchObject({ source: 'crm', last_seq: 2, last_event_at: T0, applied: 2 });
  });

  it('a source never seen stands at last_seq 0', async () => {
    await open();
    expect((await h.inject({ url: '/intake/v1/sources/new-source', token })).json()).toMatchObject({
      source: 'new-source',
      last_seq: 0,
      last_event_at: null,
    });
    const bad = await h.inject({ url: '/intake/v1/sources/Not%20A%20Source', token });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'invalid_request', param: 'source' });
  });

  it('malformed JSON is 400 invalid_request as problem+json, and nothing is applied', async () => {
    await open();
    const res = await post('{"source": "crm", "events": [ {"seq": 1, ');
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json().code).toBe('invalid_request');
    expect((await position()).last_seq).toBe(0);
  });

  it('a body over intakeMaxBodyBytes is 413 body_too_large', async () => {
    await open({ intakeMaxBodyBytes: 2048, intakeMaxEventBytes: 1024 });
    const events = wire(
      1,
      Array.from({ length: 40 }, (_, i) => renamed('lead_1', `name ${i}`)),
    );
    const res = await post({ source: 'crm', events });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe('body_too_large');
  });

  it('a batch over intakeMaxEvents is 413 too_many_events naming events; nothing is applied', async () => {
    await open({ intakeMaxEvents: 3 });
    const res = await post({
      source: 'crm',
      events: wire(1, [newLead('lead_1'), renamed('lead_1', 'a'), renamed('lead_1', 'b'), renamed('lead_1', 'c')]),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ code: 'too_many_events', param: 'events' });
    expect(await name('lead_1')).toBeUndefined();
  });

  it('an event over intakeMaxEventBytes is 413 event_too_large naming its index, never its value', async () => {
    await open({ intakeMaxEventBytes: 300 });
    const secret = `Secret-${'x'.repeat(400)}`;
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1'), renamed('lead_1', secret)]) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ code: 'event_too_large', param: 'events[1]' });
    expect(res.body).not.toContain('Secret-');
    expect(await name('lead_1')).toBeUndefined();
    expect((await position()).last_seq).toBe(0);
  });

  it('an envelope error is 400 with the path of the field (events[3].seq, source, an unknown member)', async () => {
    await open();
    const events: Record<string, unknown>[] = wire(1, [
      newLead('lead_1'),
      renamed('lead_1', 'a'),
      renamed('lead_1', 'b'),
      renamed('lead_1', 'Marker-Value'),
    ]);
    delete events[3]!.seq;
    const missing = await post({ source: 'crm', events });
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toMatchObject({ code: 'invalid_request', param: 'events[3].seq' });
    expect(missing.body).not.toContain('Marker-Value');
    const badSource = await post({ source: 'Has Spaces', events: wire(1, [newLead('lead_1')]) });
    expect(badSource.json()).toMatchObject({ code: 'invalid_request', param: 'source' });
    const extra = await post({ source: 'crm', events: wire(1, [newLead('lead_1')]), priority: 'high' });
    expect(extra.json()).toMatchObject({ code: 'invalid_request', param: 'priority' });
    const notObject = await post({ source: 'crm', events: [5] });
    expect(notObject.json()).toMatchObject({ code: 'invalid_request', param: 'events[0]' });
    const backwards = await post({
      source: 'crm',
      events: [
        { ...newLead('lead_1'), seq: 2 },
        { ...renamed('lead_1', 'a'), seq: 2 },
      ],
    });
    expect(backwards.json()).toMatchObject({ code: 'invalid_request', param: 'events[1].seq' });
    const empty = await post({ source: 'crm', events: [] });
    expect(empty.json()).toMatchObject({ code: 'invalid_request', param: 'events' });
    expect(await name('lead_1')).toBeUndefined();
  });

  it('an event whose own fields are wrong comes back rejected with the field, never its value; the others apply', async () => {
    await open();
    const bad = { type: 'lead.updated', at: T0, lead: 'lead_1', name: 12345678 } as unknown as CrmEvent;
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1'), bad, renamed('lead_1', 'Ada')]) });
    expect(res.statusCode).toBe(200);
    expect(res.json().results).toEqual([
      { seq: 1, outcome: 'applied' },
      { seq: 2, outcome: 'rejected', code: 'invalid_event', field: 'name' },
      { seq: 3, outcome: 'applied' },
    ]);
    expect(res.body).not.toContain('12345678');
  });

  it('a wrong token is 401 invalid_token; nothing is applied', async () => {
    await open();
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1')]) }, 'cxo_wrongwrongwrong');
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('invalid_token');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(await name('lead_1')).toBeUndefined();
  });

  it('a read API key used as an intake token is 401 api_key_not_token', async () => {
    await open();
    await w.apply(newLead('lead_0'));
    const { key } = await createIntegration(w.store, h.clock, { teams: [TEAM], name: 'Reader' });
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1')]) }, key);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('api_key_not_token');
    expect(await name('lead_1')).toBeUndefined();
  });

  it('an operator token without the intake scope is 403 insufficient_scope', async () => {
    await open();
    const reader = await h.token('settings-page', ['read', 'keys', 'operate']);
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1')]) }, reader);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('insufficient_scope');
    expect((await h.inject({ url: '/intake/v1/sources/crm', token: reader })).statusCode).toBe(403);
  });

  it('a gap is 409 sequence_gap naming last_seq; nothing of the batch is applied', async () => {
    await open();
    await post({ source: 'crm', events: wire(1, [newLead('lead_1')]) });
    const res = await post({ source: 'crm', follows: 5, events: wire(6, [renamed('lead_1', 'Ada')]) });
    expect(res.statusCode).toBe(409);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({ code: 'sequence_gap', source: 'crm', last_seq: 1 });
    expect(await name('lead_1')).not.toBe('Ada');
    // Without `follows`, the first seq minus one must be applied too.
    const implicit = await post({ source: 'crm', events: wire(3, [renamed('lead_1', 'Ada')]) });
    expect(implicit.json()).toMatchObject({ code: 'sequence_gap', last_seq: 1 });
    const resent = await post({ source: 'crm', follows: 1, events: wire(6, [renamed('lead_1', 'Ada')]) });
    expect(resent.json()).toMatchObject({ last_seq: 6, results: [{ seq: 6, outcome: 'applied' }] });
  });

  it('an id re-sent with other content is rejected with id_conflict and never applied; the same content is a duplicate', async () => {
    await open();
    await post({ source: 'crm', events: wire(1, [newLead('lead_1'), renamed('lead_1', 'Ada', 'change-7')]) });
    const res = await post({
      source: 'crm',
      events: wire(3, [renamed('lead_1', 'Bea', 'change-7'), { ...renamed('lead_1', 'Ada', 'change-7') }]),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().results).toEqual([
      { seq: 3, id: 'change-7', outcome: 'rejected', code: 'id_conflict', field: 'id' },
      { seq: 4, id: 'change-7', outcome: 'duplicate' },
    ]);
    expect(await name('lead_1')).toBe('Ada');
  });

  it('an event for an unknown lead is quarantined; later events of its lead wait behind it, others apply', async () => {
    await open();
    const res = await post({
      source: 'crm',
      events: wire(1, [renamed('lead_ghost', 'Nobody'), newLead('lead_2'), renamed('lead_ghost', 'Still nobody')]),
    });
    expect(res.statusCode).toBe(200);
    const results = res.json().results as { seq: number; outcome: string; code?: string }[];
    expect(results[0]).toMatchObject({ seq: 1, outcome: 'quarantined' });
    expect(results[0]?.code).not.toBe('waiting_behind');
    expect(results[1]).toEqual({ seq: 2, outcome: 'applied' });
    expect(results[2]).toMatchObject({ seq: 3, outcome: 'quarantined', code: 'waiting_behind' });
    expect((await w.store.intakeQuarantine({ source: 'crm' })).map((q) => q.seq)).toEqual([1, 3]);
  });

  it('a write side that is behind answers 429 write_side_busy with Retry-After; nothing was applied', async () => {
    await open();
    fault.reason = 'busy';
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1')]) });
    expect(res.statusCode).toBe(429);
    expect(res.json().code).toBe('write_side_busy');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('the operator listener counts intake requests by outcome: route, status and error code', async () => {
    await open();
    await post({ source: 'crm', events: wire(1, [newLead('lead_1')]) });
    await post({ source: 'crm', follows: 4, events: wire(5, [renamed('lead_1', 'Ada')]) });
    await post({ source: 'crm', follows: 4, events: wire(5, [renamed('lead_1', 'Ada')]) }, 'cxo_wrong');
    const text = await metrics.registry.metrics();
    const count = (status: number, code: string) =>
      new RegExp(
        `crm_export_internal_requests_total\\{route="/intake/v1/batches",status="${status}",code="${code}"\\} (\\d+)`,
      ).exec(text)?.[1];
    expect(count(200, '')).toBe('1');
    expect(count(409, 'sequence_gap')).toBe('1');
    expect(count(401, 'invalid_token')).toBe('1');
  });

  it('a database that is unavailable answers 503 service_unavailable with Retry-After', async () => {
    await open();
    fault.reason = 'connection_lost';
    const res = await post({ source: 'crm', events: wire(1, [newLead('lead_1')]) });
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('service_unavailable');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});

/** The store; while `fault.reason` is set, every write transaction fails as the database would. */
function failingWrites(store: Store, fault: { reason: 'busy' | 'connection_lost' | null }): Store {
  return new Proxy(store, {
    get(target, member) {
      if (member === 'write') {
        return (fn: Parameters<Store['write']>[0]) => {
          const { reason } = fault;
          if (reason === null) return target.write(fn);
          return Promise.reject(new StoreUnavailableError(reason, reason === 'busy' ? 'SQLITE_BUSY' : 'ECONNRESET'));
        };
      }
      const value = Reflect.get(target, member, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
