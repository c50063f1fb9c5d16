import http from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TABLE_BYTES } from '../../src/access/limits/memory-table.js';
import { buildApp } from '../../src/http/app.js';
import { DEFAULT_LIMITS } from '../../src/limits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type AccessHarness, accessHarness } from '../access/http-harness.js';

// What a process holds for its clients is bounded whatever they send (docs/deploy.md, "Memory of an API
// process"): the page cache by its budget, and each map of the limits by DEFAULT_TABLE_BYTES, keys
// included. Over real HTTP (light-my-request keeps garbage of its own), with a small page budget so that a
// few thousand requests pass it, from addresses X-Forwarded-For chooses (one hop trusted).

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const PAGE_CACHE_BYTES = 1024 * 1024;
/** The maps these requests can grow: the firewall budget's and the failed authentications' per address. */
const ADDRESS_TABLES = 2;
/** Everything else a process allocates for good while serving: compiled code, lazily built objects. */
const SLACK = 4 * 1024 * 1024;
const LONG = 'x'.repeat(15_000);

describe('memory held for clients', () => {
  let h: AccessHarness;
  let store: SqliteStore;
  let app: FastifyInstance;
  let agent: http.Agent;
  let port: number;

  beforeAll(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    h = await accessHarness(store);
    app = buildApp({
      store,
      clock: h.clock,
      limits: DEFAULT_LIMITS,
      access: h.access,
      pageCacheBytes: PAGE_CACHE_BYTES,
      trustProxy: { hops: 1 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  });
  afterAll(async () => {
    agent.destroy();
    await app.close();
    await h.app.close();
    h.access.close();
    await store.close();
  });

  const get = (path: string, headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const request = http.get({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode as number));
      });
      request.on('error', reject);
    });

  /** Sends `count` requests, four at a time; returns how many got each status. */
  const send = async (count: number, request: (i: number) => [string, Record<string, string>]) => {
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const status = await get(...request(next++));
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    return statuses;
  };

  const held = () => {
    gc();
    gc();
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    return heapUsed + arrayBuffers;
  };

  it('distinct filter ids, long and short, and distinct client addresses grow a process by at most its documented bound', async () => {
    const key = { authorization: h.key, 'service-team': 'team_a1' };
    const address = (i: number) => ({ 'x-forwarded-for': `2001:db8::${i.toString(16)}` });
    // Whatever is built once (compiled code, the first pages) is built before measuring.
    await send(100, (i) => [`/v1/calls?limit=1&lead=lead_w${i}`, key]);
    const before = held();

    const lists = await send(900, (i) => {
      const filter = ['/v1/calls?limit=1&lead=lead_', '/v1/leads?limit=1&board=brd_', '/v1/leads?limit=1&stage=stg_'];
      return [`${filter[i % 3]}${i}${LONG}`, key];
    });
    const short = await send(3_000, (i) => [`/v1/calls?limit=1&lead=lead_s${i}`, key]);
    // Without a key: each address gets a firewall window and a failed-authentication window.
    const addresses = await send(700, (i) => ['/v1/calls', { 'x-forwarded-for': `${LONG.slice(0, 8_000)}${i}` }]);
    const unknownKeys = await send(200, (i) => [
      '/v1/calls',
      { authorization: `Bearer crmx_live_${String(i).padStart(12, '0')}${'0'.repeat(32)}`, ...address(i) },
    ]);
    const teams = await send(100, (i) => ['/v1/calls', { ...key, 'service-team': `team_${i}${LONG}` }]);
    const grown = held() - before;

    // A well-formed id that names nothing still matches nothing; no request failed.
    expect(lists).toEqual(new Map([[200, 900]]));
    expect(short).toEqual(new Map([[200, 3_000]]));
    expect(addresses).toEqual(new Map([[401, 700]]));
    expect(unknownKeys).toEqual(new Map([[401, 200]]));
    expect(teams).toEqual(new Map([[404, 100]]));
    expect(grown).toBeLessThan(PAGE_CACHE_BYTES + ADDRESS_TABLES * DEFAULT_TABLE_BYTES + SLACK);
  });
});
