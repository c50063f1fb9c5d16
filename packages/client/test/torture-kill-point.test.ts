// Where the torture kit's kill in the middle of a page lands: at the count of changes it aims for, even when
// the consumer writes far faster than the kit can read its changes (a page's files in a few milliseconds).

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsumerRun, WritePace } from '../src/torture/consumer-run.js';
import { groupExists, signalGroup, signalStartedGroups, trackGroup } from '../src/torture/process-groups.js';

const FILES = 400;
/** Says it is ready, waits 100 ms (the page on its way), writes FILES files in one synchronous burst, idles. */
const BURST = `const { writeFileSync } = require('node:fs');
process.stderr.write('ready\\n');
setTimeout(() => {
  for (let i = 0; i < ${FILES}; i++) writeFileSync(require('node:path').join(process.env.DIR, 'f' + i), 'x');
  setTimeout(() => {}, 30000);
}, 100);
`;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function files(dir: string): number {
  return readdirSync(dir).length;
}

/**
 * Two runs of the burst as pages of 100 items. The first teaches the kit what such a page costs (the
 * burst, then a request); the second is started and its kill armed once it is ready, as a page goes out.
 */
async function burstTwice(pageCostFactor: number) {
  const dir = mkdtempSync(join(tmpdir(), 'crm-kill-point-'));
  dirs.push(dir);
  const state = join(dir, 'state');
  mkdirSync(state);
  const script = join(dir, 'burst.cjs');
  writeFileSync(script, BURST);
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(script)}`;
  const pace = new WritePace();
  const log = join(dir, 'stderr.log');
  const readyRuns = () => readFileSync(log, 'utf8').match(/^ready$/gm)?.length ?? 0;
  const first = new ConsumerRun(state, log, pace);
  const firstDone = first.run(command, { DIR: state }, 30_000, 'run 1');
  first.delivered(100 / pageCostFactor);
  await expect.poll(() => files(state), { timeout: 20_000, interval: 5 }).toBe(FILES);
  await new Promise((r) => setTimeout(r, 200));
  await first.requested();
  await first.killNow('the first run has taught the pace');
  await firstDone;
  rmSync(state, { recursive: true });
  mkdirSync(state);
  const run = new ConsumerRun(state, log, pace);
  const done = run.run(command, { DIR: state }, 30_000, 'run 2');
  await expect.poll(readyRuns, { timeout: 20_000, interval: 2 }).toBe(2);
  run.killMidPage('halfway through the test page', 100);
  // The kit busy elsewhere for a while (its proxy, a garbage collection, a loaded machine) while the burst
  // is due: a consumer left running would write the whole page before the kit reads a single change.
  const busyUntil = performance.now() + 400;
  while (performance.now() < busyUntil);
  return { run, done, state };
}

const windows = process.platform === 'win32';
describe.skipIf(windows)(
  `torture kit: a kill halfway through a page${windows ? ' (skipped: Windows has no SIGSTOP to step the consumer)' : ''}`,
  () => {
    it('lands after half the page’s writes and before its end, however fast the consumer writes', async () => {
      const { run, done, state } = await burstTwice(1);
      const out = await done;
      expect(run.killed).toBe('halfway through the test page');
      expect(out.timedOut).toBe(false);
      // A file's changes are its creation and its write: half the changes can leave one file half made.
      expect(files(state)).toBeGreaterThanOrEqual(FILES / 2 - 1);
      expect(files(state)).toBeLessThan(FILES);
    });

    it('kills at its next request a consumer that is done with the page short of the target', async () => {
      // The first run's burst was a page of 10 items: a page of 100 should cost ten bursts, and the kill
      // aims at five.
      const { run, done, state } = await burstTwice(10);
      await expect.poll(() => files(state), { timeout: 20_000, interval: 5 }).toBe(FILES);
      await run.requested();
      await done;
      expect(run.killed).toBe('halfway through the test page');
      expect(files(state)).toBe(FILES);
    });

    it('a signal to the kit still ends a consumer it holds stopped between steps', async () => {
      // A consumer that handles SIGTERM (a graceful stop) runs its handler only once it runs again.
      const graceful = "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000)";
      const child = spawn(process.execPath, ['-e', graceful], { detached: true, stdio: 'ignore' });
      await new Promise((r) => setTimeout(r, 300));
      trackGroup(child);
      const pid = child.pid as number;
      signalGroup(pid, 'SIGSTOP');
      signalStartedGroups('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await expect.poll(() => groupExists(pid), { timeout: 10_000, interval: 20 }).toBe(false);
    });
  },
);
