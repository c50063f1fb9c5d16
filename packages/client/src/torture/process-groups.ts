// The kit starts its consumers and its throwaway service in process groups of their own, so that a
// stopped run takes whatever the shell started with it. A signal to the kit must reach them too: the
// command calls `signalStartedGroups` before it exits.
import type { ChildProcess } from 'node:child_process';

const started = new Set<number>();

/** Remembers `child`'s group until it exits. */
export function trackGroup(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  started.add(pid);
  child.once('exit', () => started.delete(pid));
}

/** Sends `signal` to the group of `pid` (to `pid` alone on Windows). False when it is gone. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** True while any process of the group of `pid` exists, a killed one not yet reaped (a zombie) included. */
export function groupExists(pid: number): boolean {
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends `signal` to every group the kit started that is still running. */
export function signalStartedGroups(signal: NodeJS.Signals): void {
  for (const pid of started) {
    signalGroup(pid, signal);
    // A consumer the kit holds stopped between steps (consumer-run.ts) acts on the signal once it runs.
    signalGroup(pid, 'SIGCONT');
  }
}
