import { vi } from 'vitest';

// What a command run inside the test process (an admin command registered on a fresh program) prints.

/**
 * Hands each write to standard output to `onWrite` instead of printing it, drops standard error and starts
 * the exit code at 0. Call it in `beforeEach`, `releaseOutput` in `afterEach`.
 */
export function captureOutput(onWrite: (chunk: string) => void): void {
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    onWrite(String(chunk));
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  process.exitCode = 0;
}

/** Undoes `captureOutput` (and every other mock) and resets the exit code. */
export function releaseOutput(): void {
  vi.restoreAllMocks();
  process.exitCode = 0;
}
