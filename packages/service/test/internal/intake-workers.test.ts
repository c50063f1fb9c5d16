import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { cliJson, runCli, startCli, tempDir } from '../cli/cli.js';
import { adminQuery } from '../support/postgres.js';

// Issue 27's concurrency test: `serve --workers 2` (every worker serves the internal listener on one port)
// and two producers posting two sources at once, each with two batches in flight, every request on a new
// connection so either worker may take it. One source's order holds: a batch that arrives before the one
// it follows gets 409 sequence_gap and is sent again, every seq is applied exactly once, and the lead ends
// in the state of its source's last event. The two sources apply side by side: their answers interleave.

const REDIS_URL = process.env.REDIS_URL;
const PG_URL = process.env.PG_URL;
const BACKENDS = (process.env.BACKENDS ?? 'sqlite,postgres').split(',').map((b) => b.trim());
const BATCHES = 16;
const PER_BATCH = 3;

interface Answer {
  status: number;
  body: { last_seq?: number; results?: { seq: number; outcome: string }[]; code?: string };
}

/** One POST on a connection of its own (no keep-alive), so the kernel may give it to either worker. */
function postFresh(url: string, token: string, body: unknown): Promise<Answer> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        },
      },
      (res) => {
        let data = '';
        res.on('data', (chunk) => {
          data += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) as Answer['body'] }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** A database of its own: a SQLite file, or a fresh PostgreSQL database. */
async function database(
  backend: string,
  tmp: ReturnType<typeof tempDir>,
): Promise<{ url: string; drop(): Promise<void> }> {
  if (backend === 'sqlite') return { url: tmp.db('intake-workers'), drop: async () => undefined };
  const name = `iw_${process.pid}_${randomBytes(5).toString('hex')}`;
  const admin = (sql: string) => adminQuery(PG_URL as string, sql);
  await admin(`CREATE DATABASE ${name}`);
  const own = new URL(PG_URL as string);
  own.pathname = `/${name}`;
  return { url: own.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** The batches of one source: a lead created, then renamed `<source>-<seq>` by every later event. */
function batchesOf(source: string, team: string, lead: string) {
  return Array.from({ length: BATCHES }, (_, b) => {
    const first = b * PER_BATCH + 1;
    const events = Array.from({ length: PER_BATCH }, (_, i) => {
      const seq = first + i;
      const at = new Date(Date.UTC(2026, 0, 10, 10, 0, seq)).toISOString();
      return seq === 1
        ? { seq, id: `${source}-${seq}`, type: 'lead.created', at, team, lead, status: 'new' }
        : { seq, id: `${source}-${seq}`, type: 'lead.updated', at, lead, name: `${source}-${seq}` };
    });
    return { source, follows: first - 1, events };
  });
}

type Batch = ReturnType<typeof batchesOf>[number];

/**
 * A producer with two batches in flight: each pair goes out at once; one that arrives before the batch it
 * follows gets 409 and goes out again once that batch is in. Batch 1 is sent first on purpose, so at least
 * one 409 happens whatever the timing. Returns every answer in the order they came.
 */
async function produce(url: string, token: string, batches: Batch[], log: { source: string; answer: Answer }[]) {
  const send = async (batch: Batch) => {
    const answer = await postFresh(url, token, batch);
    log.push({ source: batch.source, answer });
    return answer;
  };
  const early = await send(batches[1] as Batch);
  expect(early.status).toBe(409);
  expect(early.body).toMatchObject({ code: 'sequence_gap', last_seq: 0 });
  for (let b = 0; b < batches.length; b += 2) {
    const pair = batches.slice(b, b + 2);
    const answers = await Promise.all(pair.map(send));
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 409) {
        // Nothing of it was applied: send it again now that the batch before it is in.
        expect(answer.body.code).toBe('sequence_gap');
        const again = await send(pair[i] as Batch);
        expect(again.status).toBe(200);
      } else {
        expect(answer.status).toBe(200);
      }
    }
  }
}

for (const backend of BACKENDS) {
  const skipped = !REDIS_URL
    ? ' (skipped: serve --workers needs Redis: set REDIS_URL)'
    : backend === 'postgres' && !PG_URL
      ? ' (skipped: PostgreSQL is not enabled: set PG_URL)'
      : '';
  describe.skipIf(skipped !== '')(`intake under serve --workers 2 [${backend}]${skipped}`, () => {
    it('two producers for two sources: each source applies in seq order exactly once (409s resent), and the sources interleave', {
      timeout: 240_000,
    }, async () => {
      const tmp = tempDir();
      const db = await database(backend, tmp);
      try {
        const demo = await cliJson<{ teams: string[] }>([
          'demo',
          '--db',
          db.url,
          '--teams',
          '1',
          '--leads',
          '0',
          '--seed',
          '5',
          '--json',
        ]);
        const team = demo.teams[0] as string;
        const created = await runCli([
          'admin',
          'tokens',
          'create',
          '--db',
          db.url,
          '--name',
          'relay',
          '--scope',
          'intake',
          '--json',
        ]);
        expect(created.code, created.stderr).toBe(0);
        const { token } = JSON.parse(created.stdout) as { token: string };

        const server = await startCli(
          ['serve', '--db', db.url, '--port', '0', '--workers', '2', '--internal-port', '0'],
          { REDIS_URL: REDIS_URL as string },
        );
        const log: { source: string; answer: Answer }[] = [];
        try {
          const internal = /internal listener: (http:\/\/\S+) /.exec(server.stdout())?.[1];
          expect(internal, server.stdout()).toBeDefined();
          const url = `${internal}/intake/v1/batches`;
          await Promise.all([
            produce(url, token, batchesOf('crm-a', team, 'lead_IntakeWorkersA1'), log),
            produce(url, token, batchesOf('crm-b', team, 'lead_IntakeWorkersB1'), log),
          ]);
        } finally {
          expect(await server.stop()).toBe(0);
        }

        const total = BATCHES * PER_BATCH;
        for (const source of ['crm-a', 'crm-b']) {
          const answers = log.filter((entry) => entry.source === source).map((entry) => entry.answer);
          const applied = answers
            .filter((a) => a.status === 200)
            .flatMap((a) => a.body.results ?? [])
            .filter((r) => r.outcome === 'applied')
            .map((r) => r.seq);
          // Every seq applied once. The order is checked on the stored feed below: two batches committed
          // back to back on two workers may answer in either order.
          expect(applied.sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
          expect(answers.filter((a) => a.status === 409).length).toBeGreaterThanOrEqual(1);
        }
        // Side by side: the answers of the two sources alternate rather than one source after the other.
        const order = log.filter((entry) => entry.answer.status === 200).map((entry) => entry.source);
        const switches = order.filter((source, i) => i > 0 && source !== order[i - 1]).length;
        expect(switches).toBeGreaterThan(2);

        const store = await openStore(db.url, { create: false });
        try {
          for (const [source, lead] of [
            ['crm-a', 'lead_IntakeWorkersA1'],
            ['crm-b', 'lead_IntakeWorkersB1'],
          ] as const) {
            const record = await store.getRecord('lead', lead);
            expect(JSON.parse(record?.json ?? '{}').name).toBe(`${source}-${total}`);
            // One version per event that changed it: the creation, then each rename once.
            expect(record?.version).toBe(total);
            // Applied in seq order: version v of the lead carries the name of seq v, entry by entry in feed order.
            const entries = (await store.readFeed(team, 0, 10_000)).filter((e) => e.kind === 'lead' && e.id === lead);
            expect(entries.map((e) => e.version)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
            for (const entry of entries.slice(1)) {
              expect(JSON.parse(entry.body ?? '{}').name).toBe(`${source}-${entry.version}`);
            }
          }
          const sources = await store.intakeSources();
          expect(sources.map((s) => [s.source, s.lastSeq, s.applied]).sort()).toEqual([
            ['crm-a', total, total],
            ['crm-b', total, total],
          ]);
        } finally {
          await store.close();
        }
      } finally {
        await db.drop();
        tmp.remove();
      }
    });
  });
}
