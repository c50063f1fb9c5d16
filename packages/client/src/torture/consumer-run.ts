// One run of the consumer command: started in a process group of its own with the kit's variables, its
// standard error appended to the history's log file, stopped at the time limit, and killed (SIGKILL) when
// a history says so: at once, at its first write to the state directory, or in the middle of a page.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChangeCounter } from './change-counter.js';
import { groupExists, signalGroup, trackGroup } from './process-groups.js';

/** How a history stops the consumer in the middle of its work. */
export interface RunControl {
  /** Kills it at its next write to its state directory (or soon after, when it writes nothing there). */
  killAtFirstWrite(reason: string): void;
  /**
   * Kills it halfway through storing the feed page of `items` items it is about to receive: after half
   * the writes to its state directory it made per item for the pages it stored whole before.
   */
  killMidPage(reason: string, items: number): void;
  /** Kills it now and waits until it is gone. */
  killNow(reason: string): Promise<void>;
}

/**
 * Writes to the state directory per feed item, learned over a history's runs from the pages the consumer
 * stored whole (from the page's answer to its next request). A kill at the first write lands before that
 * write is finished as often as not (a cursor file half written is no cursor), and one late on a busy
 * machine lands after the whole page: halfway is clear of both.
 */
export class WritePace {
  private writes = 0;
  private items = 0;

  add(writes: number, items: number): void {
    this.writes += writes;
    this.items += items;
  }

  /** The writes a page of `items` items takes, or null before any page was stored whole. */
  expected(items: number): number | null {
    return this.items === 0 ? null : (this.writes / this.items) * items;
  }
}

export interface RunOutcome {
  run: number;
  /** The exit code, or null when the run was stopped (timeout) or killed by a signal. */
  exitCode: number | null;
  timedOut: boolean;
  /** Why the kit killed it, when it did. */
  killed?: string;
  ms: number;
}

/** A consumer that keeps its state elsewhere writes nothing the kit can see: it is killed after this. */
const FIRST_WRITE_WAIT_MS = 300;
/** A consumer known to write there is given this much running time to start. */
const WRITER_START_WAIT_MS = 3000;
/** A consumer that stops writing short of its target (it stored fewer items this time) is killed after this. */
const QUIET_MS = 300;
/**
 * While a kill is armed, the consumer runs in steps this long (SIGCONT, then SIGSTOP). The kit sleeps
 * through a step without going back to its event loop: woken by a timer of the loop on a busy machine,
 * it came back after the consumer had stored the whole page.
 */
const STEP_MS = 0.5;
/** What the kit sleeps on during a step (nothing ever wakes it but the time). */
const STEP_CLOCK = new Int32Array(new SharedArrayBuffer(4));
/** After a step, the kit counts the writes until none came for this long. */
const SETTLE_MS = 1;
/** The longest a count after a step waits for the last changes (a writer outside the group aside). */
const SETTLE_LIMIT_MS = 200;
/**
 * A killed process lingers as a zombie until it is reaped, and a consumer's lock may take a pid that
 * still exists for a live owner: the next run starts once the group is gone, or after this long.
 */
const REAP_WAIT_MS = 10_000;
/** The last standard error kept in memory for the verdict (the whole of it goes to the log file). */
const TAIL_CHARS = 2000;

export class ConsumerRun implements RunControl {
  private pid: number | undefined;
  private exited: Promise<void> = Promise.resolve();
  /** The changes under the state directory, counted while the run lasts. */
  private changes: ChangeCounter | undefined;
  private timer: NodeJS.Timeout | undefined;
  private done = false;
  /** The page the consumer is storing: its size and the writes counted when it went out. */
  private page: { items: number; from: number } | null = null;
  /**
   * The kill a history asked for: at the count of writes reaching `at` (no target: after a wait), or at the
   * next request. `stepped`: the consumer runs in steps meanwhile (see `stepToKill`).
   */
  private armed: { reason: string; at: number | null; stepped: boolean } | null = null;
  killed: string | null = null;

  constructor(
    private readonly stateDir: string,
    private readonly stderrFile: string,
    private readonly pace: WritePace = new WritePace(),
  ) {}

  /** Runs `command` to its end; `label` heads its part of the log file. */
  run(
    command: string,
    vars: Record<string, string>,
    timeoutMs: number,
    label: string,
  ): Promise<{ exitCode: number | null; timedOut: boolean; ms: number; stderrTail: string }> {
    const started = Date.now();
    appendFileSync(this.stderrFile, `--- ${label} ---\n`);
    this.changes = new ChangeCounter(this.stateDir, () => this.wrote());
    return new Promise((resolve, reject) => {
      const child = spawn(command, {
        shell: true,
        detached: process.platform !== 'win32',
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, ...vars },
      });
      this.pid = child.pid;
      this.exited = new Promise((r) => child.once('close', () => void this.reaped().then(r)));
      trackGroup(child);
      let tail = '';
      child.stderr?.on('data', (c: Buffer) => {
        appendFileSync(this.stderrFile, c);
        tail = (tail + c.toString()).slice(-TAIL_CHARS);
      });
      let timedOut = false;
      const limit = setTimeout(() => {
        timedOut = true;
        if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      }, timeoutMs);
      child.on('error', (err) => {
        clearTimeout(limit);
        this.unwatch();
        reject(err);
      });
      child.on('close', async (code) => {
        this.done = true;
        clearTimeout(limit);
        this.unwatch();
        await this.reaped();
        resolve({ exitCode: code, timedOut, ms: Date.now() - started, stderrTail: tail });
      });
    });
  }

  /** Writes to the state directory seen in this run. */
  private get writes(): number {
    return this.changes?.count ?? 0;
  }

  killAtFirstWrite(reason: string): void {
    this.arm(reason, this.writes + 1, FIRST_WRITE_WAIT_MS);
  }

  killMidPage(reason: string, items: number): void {
    const expected = this.pace.expected(items);
    if (expected === null) this.killAtFirstWrite(reason);
    else if (expected < 1) this.arm(reason, null, FIRST_WRITE_WAIT_MS);
    else this.arm(reason, this.writes + Math.max(1, Math.round(expected / 2)), WRITER_START_WAIT_MS);
  }

  /** A feed page of `items` items went out to the consumer whole. */
  delivered(items: number): void {
    this.page = { items, from: this.writes };
  }

  /**
   * The consumer made a request: it is done with the page before, which teaches the pace unless the
   * page was cut short by a kill. A kill still armed lands now, before the request is answered.
   */
  async requested(): Promise<void> {
    if (this.page && this.armed === null && this.killed === null)
      this.pace.add(this.writes - this.page.from, this.page.items);
    this.page = null;
    if (this.armed) await this.killNow(this.armed.reason);
  }

  private arm(reason: string, at: number | null, waitMs: number): void {
    if (this.killed !== null || this.done || this.armed) return;
    const stepped = at !== null && this.pid !== undefined && signalGroup(this.pid, 'SIGSTOP');
    this.armed = { reason, at, stepped };
    if (stepped) void this.stepToKill(at, waitMs);
    else this.wait(waitMs);
  }

  /**
   * Runs the stopped consumer in short steps until it has made `at` writes, then kills it. Between steps it
   * is stopped and the kit counts its writes to the end, so a kill lands at the count it aims for: a kit
   * left behind by a busy machine would otherwise see the count reached only after the consumer had
   * finished the page. The time limits count the consumer's running time alone.
   */
  private async stepToKill(at: number, startMs: number): Promise<void> {
    const pid = this.pid as number;
    let ran = 0;
    let lastWrite: number | null = null;
    let seen = this.writes;
    for (;;) {
      await this.settle();
      const armed = this.armed;
      if (!armed || this.killed !== null || this.done) return;
      if (this.writes > seen) {
        seen = this.writes;
        lastWrite = ran;
      }
      const waited = lastWrite === null ? ran >= startMs : ran - lastWrite >= QUIET_MS;
      if (this.writes >= at || waited) {
        await this.killNow(armed.reason);
        return;
      }
      const from = performance.now();
      signalGroup(pid, 'SIGCONT');
      Atomics.wait(STEP_CLOCK, 0, 0, STEP_MS);
      signalGroup(pid, 'SIGSTOP');
      ran += performance.now() - from;
    }
  }

  /** Waits until the stopped consumer's last writes are counted. */
  private async settle(): Promise<void> {
    const until = performance.now() + SETTLE_LIMIT_MS;
    let n: number;
    do {
      n = this.writes;
      await sleep(SETTLE_MS);
    } while (this.writes !== n && performance.now() < until);
  }

  private wrote(): void {
    const armed = this.armed;
    if (!armed || armed.stepped) return;
    if (armed.at !== null && this.writes >= armed.at) void this.killNow(armed.reason);
    else this.wait(QUIET_MS);
  }

  private wait(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.armed) void this.killNow(this.armed.reason);
    }, ms);
  }

  async killNow(reason: string): Promise<void> {
    this.disarm();
    if (this.killed === null && this.pid !== undefined && !this.done) {
      this.killed = reason;
      signalGroup(this.pid, 'SIGKILL');
    }
    await this.exited;
  }

  /** After a kill, until the group's last process is reaped (or REAP_WAIT_MS has passed). */
  private async reaped(): Promise<void> {
    const pid = this.pid;
    if (this.killed === null || pid === undefined) return;
    const until = Date.now() + REAP_WAIT_MS;
    while (groupExists(pid) && Date.now() < until) await sleep(20);
  }

  private unwatch(): void {
    this.changes?.close();
    this.disarm();
  }

  private disarm(): void {
    this.armed = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
