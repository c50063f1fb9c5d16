import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs `crm-export` the way a user does: a separate `node packages/service/bin/crm-export.js` process
// started from the repository root.

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const BIN = join(REPO_ROOT, 'packages/service/bin/crm-export.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** An environment without the variables that would point the command elsewhere than the test says. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', ...extra };
  for (const name of ['DATABASE_URL', 'HOST', 'PORT', 'REDIS_URL', 'INIT_CWD']) if (!(name in extra)) delete env[name];
  return env;
}

/** Runs the command to completion, optionally writing `input` to its standard input. */
export function runCli(args: readonly string[], options: { input?: string; env?: Record<string, string> } = {}) {
  return new Promise<CliResult>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env: cleanEnv(options.env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** `runCli` that expects success and parses the JSON it printed. */
export async function cliJson<T = unknown>(args: readonly string[]): Promise<T> {
  const result = await runCli(args);
  if (result.code !== 0) throw new Error(`crm-export ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

export interface RunningCli {
  /** Base URL with `/v1`, as the command printed it. */
  base: string;
  /** Everything printed to standard output so far. */
  stdout(): string;
  /** Everything printed to standard error so far. */
  stderr(): string;
  /** The process id. */
  pid: number;
  /** Resolves with the exit code (null when a signal ended it) once the process and its output have closed. */
  exited: Promise<number | null>;
  /** Resolves with the exit code as soon as the process itself has exited (before children that share its output). */
  processExit: Promise<number | null>;
  /** Closes this end of its standard output and error, as when whatever read them has gone. */
  closeOutput(): void;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts a long-running command (`serve`, `start`) and waits until it prints where it serves. */
export function startCli(
  args: readonly string[],
  env: Record<string, string> = {},
  /** In a process group of its own (its pid is the group's id), as a command started from a terminal. */
  { detached = false } = {},
): Promise<RunningCli> {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env: cleanEnv(env), detached });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const processExit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise<RunningCli>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not serving after 60 s: ${stderr}`)), 60_000);
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      const match = /crm-export is serving (http:\/\/\S+\/v1)\n/.exec(stdout);
      // `start` prints a block of lines; wait for its last one.
      if (match && (!args.includes('start') || stdout.includes('Stop with Ctrl+C.'))) {
        clearTimeout(timer);
        resolve({
          base: match[1]!,
          stdout: () => stdout,
          stderr: () => stderr,
          pid: child.pid as number,
          exited,
          processExit,
          closeOutput: () => {
            child.stdout?.destroy();
            child.stderr?.destroy();
          },
          stop: () => {
            child.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before serving: ${stderr}`));
    });
  });
}

/** A temporary folder for a test's database files. */
export function tempDir(): { dir: string; db(name: string): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'crm-export-cli-'));
  return {
    dir,
    db: (name) => `sqlite:${join(dir, `${name}.db`)}`,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
