// `torture --start-service CMD`: a throwaway crm-export service for the kit, started with the service's
// own commands (this package does not depend on the service's code): demo data in a temporary SQLite
// database, a key reading its teams, and `serve` on a free loopback port with a roomy item budget and no
// feed hold-back, so every history can read everything at once. The histories that change the service
// while a consumer reads apply CRM events to its database with `ingest`.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signalGroup, trackGroup } from './process-groups.js';

export interface DemoServiceOptions {
  /** Leads per team (default 30: a few feed pages of 100 per team). */
  leads?: number;
  /** Example teams (default 2: `team-leaves-key` needs two). */
  teams?: number;
  /** Demo seed (default 7). */
  seed?: number;
}

/** Changes the service while it serves: CRM events in the NDJSON ingest format (docs/ingest.md). */
export interface ServiceWriter {
  ingest(events: object[]): Promise<void>;
}

export interface DemoService extends ServiceWriter {
  baseUrl: string;
  key: string;
  teams: string[];
  close(): Promise<void>;
}

/** The limits the throwaway service runs with. */
export const DEMO_SERVICE_LIMITS = { feedHoldBackMs: 0, itemsPerMinute: 1_000_000, readRequestsPerMinute: 100_000 };

/** `command` runs the service's CLI, e.g. `npx crm-export` or `node path/to/crm-export.js`. */
export async function startDemoService(command: string, options: DemoServiceOptions = {}): Promise<DemoService> {
  const dir = mkdtempSync(join(tmpdir(), 'crm-torture-service-'));
  const db = JSON.stringify(`sqlite:${join(dir, 'service.db')}`);
  // A kit stopped by a signal exits at once: the temporary database goes with it.
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir);
  let serve: ChildProcess | undefined;
  try {
    const demo = JSON.parse(
      await output(
        `${command} demo --db ${db} --teams ${options.teams ?? 2} --leads ${options.leads ?? 30} --seed ${options.seed ?? 7} --no-progress --json`,
      ),
    ) as { teams: string[] };
    const created = JSON.parse(
      await output(
        `${command} admin integrations create --db ${db} --teams ${demo.teams.join(',')} --name torture-kit --actor torture-kit --json`,
      ),
    ) as { key: string };
    const child = spawn(`${command} serve --db ${db} --host 127.0.0.1 --port 0`, {
      shell: true,
      detached: process.platform !== 'win32',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CRM_EXPORT_LIMITS: JSON.stringify(DEMO_SERVICE_LIMITS) },
    });
    serve = child;
    trackGroup(child);
    const baseUrl = await new Promise<string>((resolve, reject) => {
      let out = '';
      let err = '';
      const timer = setTimeout(() => reject(new Error(`the service did not start: ${err.slice(-500)}`)), 60_000);
      child.stderr?.on('data', (c: Buffer) => {
        err = (err + c.toString()).slice(-4000);
      });
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /serving (http:\/\/\S+\/v1)/.exec(out);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the service exited with ${code}: ${err.slice(-500)}`));
      });
    });
    let batches = 0;
    return {
      baseUrl,
      key: created.key,
      teams: demo.teams,
      ingest: async (events) => {
        const file = join(dir, `changes-${++batches}.ndjson`);
        writeFileSync(file, events.map((e) => `${JSON.stringify(e)}\n`).join(''));
        await output(`${command} ingest --db ${db} --json ${JSON.stringify(file)}`);
      },
      close: async () => {
        await stopGroup(child);
        process.off('exit', removeDir);
        removeDir();
      },
    };
  } catch (err) {
    if (serve) await stopGroup(serve);
    process.off('exit', removeDir);
    removeDir();
    throw err;
  }
}

function output(command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr?.on('data', (c: Buffer) => {
      err = (err + c.toString()).slice(-2000);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      // The first words of the command name it; its arguments hold no secret, but its output does (a key).
      const name = command.split(' --')[0];
      if (code === 0) resolve(out);
      else reject(new Error(`${name} failed (${code}): ${err.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
}

/** SIGTERM to the service and whatever its shell started (its own process group); waits for it to exit. */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const pid = child.pid;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (!signalGroup(pid, 'SIGTERM')) return;
  // A process that ignores SIGTERM for 10 s gets SIGKILL.
  const late = setTimeout(() => signalGroup(pid, 'SIGKILL'), 10_000);
  await exited;
  clearTimeout(late);
}
