import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { openStore } from '../../src/store/open-store.js';
import { applyIntakeBatch } from '../../src/write/intake/apply-intake.js';
import { REPO_ROOT, type RunningCli, runCli, startCli, tempDir } from '../cli/cli.js';
import { makeCrmOutbox } from './crm-outbox.js';
import { killHistory } from './kill-history.js';
import { dumpStore } from './store-dump.js';

// Issue 27's kill test: a history with duplicates, re-sent runs, an id conflict and poison events goes
// from the CRM's outbox through `crm-export relay` to the intake endpoint of `crm-export serve`, while
// both processes are SIGKILLed at random points. The store and its feed must then equal one clean pass of
// the same outbox rows through the same apply function, with no kill: every record at the same version,
// the same activities and removals, the same quarantine, nothing applied twice. The outbox is always in
// PostgreSQL; the service's store is SQLite, then PostgreSQL.

const PG_URL = process.env.PG_URL;
const BIN = join(REPO_ROOT, 'packages/service/bin/crm-export.js');
const BACKENDS = (process.env.BACKENDS ?? 'sqlite,postgres').split(',').map((b) => b.trim());
const KILLS = 50;
const SOURCE = 'crm-main';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const between = (low: number, high: number) => low + Math.floor(Math.random() * (high - low));

/** A port free now, for the internal listener (it must stay the same across restarts). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A PostgreSQL database of its own (the service uses its default schema there); `drop` removes it. */
async function freshDatabase(url: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `k_${process.pid}_${randomBytes(5).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const own = new URL(url);
  own.pathname = `/${name}`;
  return { url: own.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function killed(child: { pid?: number | undefined }, exited: Promise<unknown>): Promise<void> {
  try {
    process.kill(child.pid as number, 'SIGKILL');
  } catch {
    // Already gone.
  }
  await exited;
}

for (const backend of BACKENDS) {
  describe.skipIf(!PG_URL)(
    `relay and intake under SIGKILL [${backend}]${PG_URL ? '' : ' (skipped: the outbox is in PostgreSQL: set PG_URL)'}`,
    () => {
      it(`with the service and the relay SIGKILLed at random points (${KILLS} kills), the store and the feed equal one clean pass of the same history`, {
        timeout: 300_000,
      }, async () => {
        const tmp = tempDir();
        const crm = await makeCrmOutbox(PG_URL as string);
        const databases: { url: string; drop(): Promise<void> }[] = [];
        const db = async (name: string) => {
          if (backend === 'sqlite') return tmp.db(name);
          const made = await freshDatabase(PG_URL as string);
          databases.push(made);
          return made.url;
        };
        let service: RunningCli | undefined;
        let relay: { child: ChildProcess; exited: Promise<unknown> } | undefined;
        try {
          const serviceDb = await db('service');
          const migrated = await runCli(['migrate', '--db', serviceDb]);
          expect(migrated.code, migrated.stderr).toBe(0);
          const created = await runCli([
            'admin',
            'tokens',
            'create',
            '--db',
            serviceDb,
            '--name',
            'relay',
            '--scope',
            'intake',
          ]);
          const token = /cxo_[0-9A-Za-z]+/.exec(created.stdout)?.[0];
          expect(token, created.stderr).toBeDefined();
          const internalPort = await freePort();
          const intakeUrl = `http://127.0.0.1:${internalPort}`;

          const startService = async () => {
            service = await startCli([
              'serve',
              '--db',
              serviceDb,
              '--port',
              '0',
              '--internal-port',
              String(internalPort),
            ]);
          };
          const startRelay = () => {
            const child = spawn(
              process.execPath,
              [
                BIN,
                'relay',
                '--outbox-url',
                crm.url,
                '--outbox-table',
                crm.table,
                '--intake-url',
                intakeUrl,
                '--source',
                SOURCE,
                '--batch',
                '5',
                '--poll-interval',
                '20',
                '--max-backoff',
                '300',
              ],
              {
                cwd: REPO_ROOT,
                env: { ...process.env, CRM_EXPORT_INTAKE_TOKEN: token as string, LOG_LEVEL: 'warn' },
                stdio: 'ignore',
              },
            );
            relay = { child, exited: new Promise((resolve) => child.on('exit', resolve)) };
          };
          await startService();
          startRelay();

          const history = killHistory(27, 30);
          const chunk = Math.ceil(history.rows.length / KILLS);
          const lateCommits: Promise<void>[] = [];
          let inserted = 0;
          let round = 0;
          const kills = { service: 0, relay: 0 };
          while (kills.service + kills.relay < KILLS || inserted < history.rows.length) {
            if (inserted < history.rows.length) {
              const next = history.rows.slice(inserted, inserted + chunk);
              inserted += next.length;
              round += 1;
              if (round % 3 === 0 && next.length > 1) {
                // The first row's transaction commits after the rows behind it: the relay must wait for it.
                const late = await crm.open(next[0]!);
                await crm.insert(...next.slice(1));
                lateCommits.push(sleep(between(20, 300)).then(() => late.commit()));
              } else {
                await crm.insert(...next);
              }
            }
            await sleep(between(30, 400));
            // Fewer service kills than relay kills: a service restart (migrations checked, listeners opened) takes longer.
            if (Math.random() < 0.4) {
              const running = service as RunningCli;
              await killed(running, running.exited);
              kills.service += 1;
              await startService();
            } else {
              const running = relay as { child: ChildProcess; exited: Promise<unknown> };
              await killed(running.child, running.exited);
              kills.relay += 1;
              startRelay();
            }
          }
          await Promise.all(lateCommits);
          const last = Number((await crm.query(`SELECT max(id) AS m FROM ${crm.table}`)).rows[0].m);
          // Let both run until the service holds the last outbox row.
          const deadline = Date.now() + 90_000;
          let lastSeq = -1;
          while (lastSeq < last && Date.now() < deadline) {
            await sleep(200);
            const answer = await fetch(`${intakeUrl}/intake/v1/sources/${SOURCE}`, {
              headers: { authorization: `Bearer ${token}` },
            }).catch(() => undefined);
            if (answer?.status === 200) lastSeq = Number(((await answer.json()) as { last_seq: number }).last_seq);
          }
          expect(lastSeq).toBe(last);
          await killed((relay as { child: ChildProcess }).child, (relay as { exited: Promise<unknown> }).exited);
          relay = undefined;
          expect(await (service as RunningCli).stop()).toBe(0);
          service = undefined;

          // The clean pass: the same rows, in id order, through the same apply function, never interrupted.
          const cleanDb = await db('clean');
          const clean = await openStore(cleanDb, { create: true });
          try {
            const rows = (await crm.query(`SELECT id, event FROM ${crm.table} ORDER BY id`)).rows as {
              id: string;
              event: unknown;
            }[];
            let follows = 0;
            for (let at = 0; at < rows.length; at += 25) {
              const events = rows.slice(at, at + 25).map((r) => ({ seq: Number(r.id), event: r.event }));
              const result = await applyIntakeBatch(clean, systemClock, { source: SOURCE, follows, events });
              expect(result.ok).toBe(true);
              follows = events[events.length - 1]!.seq;
            }
          } finally {
            await clean.close();
          }

          const [afterKills, once] = [await dumpStore(serviceDb), await dumpStore(cleanDb)];
          expect(kills.service + kills.relay).toBeGreaterThanOrEqual(KILLS);
          expect(kills.service).toBeGreaterThan(0);
          expect(kills.relay).toBeGreaterThan(0);
          expect(once.quarantine.length).toBe(history.poison);
          expect(once.records.length).toBeGreaterThan(100);
          expect(afterKills.records).toEqual(once.records);
          expect(afterKills.feed).toEqual(once.feed);
          expect(afterKills.quarantine).toEqual(once.quarantine);
          expect(afterKills.ids).toBe(once.ids);
          const counters = ({ last_seq, applied, rejected, quarantined }: (typeof once.source)[number]) => ({
            last_seq,
            applied,
            rejected,
            quarantined,
          });
          expect(afterKills.source.map(counters)).toEqual(once.source.map(counters));
          expect(once.source[0]?.rejected).toBe(history.conflicts);
          expect(afterKills.source[0]!.duplicates).toBeGreaterThanOrEqual(once.source[0]!.duplicates);
        } finally {
          if (relay) await killed(relay.child, relay.exited);
          if (service) await killed(service, service.exited);
          await crm.drop();
          for (const made of databases) await made.drop();
          tmp.remove();
        }
      });
    },
  );
}
