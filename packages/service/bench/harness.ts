import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

/** A server started as its own process; it reports its port and, on request, its peak RSS. */
export interface ServerProcess {
  port: number;
  child: ChildProcess;
  maxRssKb(): Promise<number>;
  stop(): Promise<void>;
}

export async function startServerProcess(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = fork(fileURLToPath(new URL(script, import.meta.url)), args, {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port?: number }) => (m.port ? resolve(m.port) : reject(new Error('no port'))));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return {
    port,
    child,
    maxRssKb: () =>
      new Promise((resolve) => {
        child.once('message', (m: { maxRssKb: number }) => resolve(m.maxRssKb));
        child.send('rss');
      }),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.send('stop');
      }),
  };
}

export interface LoadResult {
  requestsPerSecond: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

/** Drives one URL with autocannon (this process) and returns the mean requests per second. */
export async function load(url: string, headers: Record<string, string>, seconds: number, connections = 10): Promise<LoadResult> {
  const result = await autocannon({ url, headers, duration: seconds, connections, pipelining: 1 });
  return {
    requestsPerSecond: result.requests.average,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}
