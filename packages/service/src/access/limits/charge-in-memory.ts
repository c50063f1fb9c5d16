import type { Charged, ChargeStep, Window } from './counter-store.js';
import { isHeld, type LockTable } from './lock-table.js';
import type { MemoryOps } from './memory-windows.js';

/** The charge on this process's memory: the same checks and takes, one after another. */
export function chargeInMemory(
  locks: readonly { local: LockTable; key: string }[],
  now: number,
  steps: readonly { memory: MemoryOps; key: string; points: number; rule: ChargeStep['rule'] }[],
): Charged {
  for (const [i, lock] of locks.entries()) {
    if (isHeld(lock.local.lockedUntil(lock.key), now)) return { ok: false, lock: i };
  }
  const windows: Window[] = [];
  for (const [i, step] of steps.entries()) {
    if (step.rule === 'read') {
      windows.push(step.memory.window(step.key));
      continue;
    }
    const taken =
      step.rule === 'fits'
        ? step.memory.take(step.key, step.points)
        : step.memory.takeWhileUnder(step.key, step.points);
    if (!taken.ok) {
      // Nothing is kept: the steps before it give their points back.
      for (const [j, before] of steps.entries()) {
        if (j < i && before.rule !== 'read') before.memory.giveBack(before.key, before.points);
      }
      return { ok: false, step: i, msBeforeNext: taken.msBeforeNext };
    }
    windows.push({ consumed: Math.max(taken.consumed, 0), msBeforeNext: taken.msBeforeNext });
  }
  return { ok: true, on: 'memory', windows };
}

/** Gives back or adds points on this process's memory, as `CounterStore.adjust` does there. */
export function adjustInMemory(changes: readonly { memory: MemoryOps; key: string; points: number }[]): void {
  for (const c of changes) {
    if (c.points < 0) c.memory.giveBack(c.key, -c.points);
    else c.memory.add(c.key, c.points);
  }
}
