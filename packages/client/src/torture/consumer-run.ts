// One run of the consumer command: started in a process group of its own with the kit's variables, its
// standard error appended to the history's log file, stopped at the time limit, and killed (SIGKILL) when
// a history says so: at once, or at its first write to the state directory (in the middle of a page).
import { spawn } from 'node:child_process';
import { appendFileSync, type FSWatcher, watch } from 'node:fs';
import { groupExists, signalGroup, trackGroup } from './process-groups.js';

/** How a history stops the consumer in the middle of its work. */
export interface RunControl {
  /** Kills it at its next write to its state directory (or soon after, when it writes nothing there). */
  killAtFirstWrite(reason: string): void;
  /** Kills it now and waits until it is gone. */
  killNow(reason: string): Promise<void>;
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
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private done = false;
  killed: string | null = null;

  constructor(
    private readonly stateDir: string,
    private readonly stderrFile: string,
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
        this.disarm();
        reject(err);
      });
      child.on('close', async (code) => {
        this.done = true;
        clearTimeout(limit);
        this.disarm();
        await this.reaped();
        resolve({ exitCode: code, timedOut, ms: Date.now() - started, stderrTail: tail });
      });
    });
  }

  killAtFirstWrite(reason: string): void {
    if (this.killed !== null || this.done || this.watcher) return;
    const fire = () => void this.killNow(reason);
    try {
      this.watcher = watch(this.stateDir, { recursive: true }, fire);
    } catch {
      // No watcher on this platform: the wait below still kills it.
    }
    this.timer = setTimeout(fire, FIRST_WRITE_WAIT_MS);
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
    while (groupExists(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  private disarm(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
