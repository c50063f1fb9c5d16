import { type ChildProcess, fork } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

export interface Rss {
  rssKb: number;
  anonKb?: number;
  fileKb?: number;
  /** The V8 old generation's committed size (API server only). */
  oldSpaceKb?: number;
}

/** A server started as its own process; it reports its port and, on request, its peak RSS. */
export interface ServerProcess {
  port: number;
  origin: string;
  child: ChildProcess;
  maxRssKb(): Promise<number>;
  /** Resident set size now, KiB, and (API server, Linux) its anonymous and file-backed parts. */
  rss(): Promise<Rss>;
  /** Heap used and external buffers after a full collection, KiB (API server with `--expose-gc`; else without one). */
  heapAfterGcKb(): Promise<number>;
  /** CPU time (user + system) the process has used so far, microseconds. */
  cpuUs(): Promise<number>;
  /** Starts the CPU profiler (API server only); `profileStop` writes the .cpuprofile to `path`. */
  profileStart(): Promise<void>;
  profileStop(path: string): Promise<void>;
  stop(): Promise<void>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  /** Extra node flags, e.g. `--cpu-prof --cpu-prof-dir=DIR`. */
  nodeFlags?: string[];
}

export async function startServerProcess(
  script: string,
  args: string[],
  options: StartOptions = {},
): Promise<ServerProcess> {
  // A relative script is one of these benchmarks; an absolute one may be another checkout's (list --before).
  const file = isAbsolute(script) ? script : fileURLToPath(new URL(script, import.meta.url));
  const child = fork(file, args, {
    execArgv: ['--import', 'tsx', ...(options.nodeFlags ?? [])],
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port?: number }) => (m.port ? resolve(m.port) : reject(new Error('no port'))));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  child.removeAllListeners('exit');
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    child,
    maxRssKb: () =>
      new Promise((resolve) => {
        child.once('message', (m: { maxRssKb: number }) => resolve(m.maxRssKb));
        child.send('rss');
      }),
    rss: () =>
      new Promise((resolve) => {
        child.once('message', (m: Rss) => resolve(m));
        child.send('rss-now');
      }),
    heapAfterGcKb: () =>
      new Promise((resolve) => {
        child.once('message', (m: { heapUsedKb: number }) => resolve(m.heapUsedKb));
        child.send('heap-after-gc');
      }),
    cpuUs: () =>
      new Promise((resolve) => {
        child.once('message', (m: { cpuUs: number }) => resolve(m.cpuUs));
        child.send('cpu');
      }),
    profileStart: () => ask(child, 'profile-start'),
    profileStop: (path) => ask(child, { profileStop: path }),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.send('stop');
      }),
  };
}

/** Sends `message` and waits for the child's next message. */
function ask(child: ChildProcess, message: unknown): Promise<void> {
  return new Promise((resolve) => {
    child.once('message', () => resolve());
    child.send(message as string);
  });
}

export interface LoadResult {
  requestsPerSecond: number;
  /** Requests answered. */
  total: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

/**
 * Drives one URL with autocannon (this process) and returns the mean requests per second. With `paths`,
 * each request takes the next of them in turn (over all connections), e.g. a different page each time.
 */
export async function load(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections = 10,
  paths?: readonly string[],
): Promise<LoadResult> {
  let next = 0;
  const requests = paths?.length
    ? [{ setupRequest: (request: object) => ({ ...request, path: paths[next++ % paths.length] }) }]
    : undefined;
  const result = await autocannon({
    url,
    headers,
    duration: seconds,
    connections,
    pipelining: 1,
    ...(requests ? { requests } : {}),
  });
  return {
    requestsPerSecond: result.requests.average,
    total: result.requests.total,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

/** How long and how hard each measurement runs (run.ts arguments). */
export interface LoadPlan {
  seconds: number;
  warmUpSeconds: number;
  connections: number;
  /** Every variant is measured once per round, rounds interleaved, so drift in machine load hits all alike. */
  rounds: number;
}

/** Something to load: a URL with its headers, or any other measurement that yields requests per second. */
export interface Variant {
  name: string;
  url?: string;
  headers?: Record<string, string>;
  /** Paths (with query) on `url`'s origin, requested in turn: a different one each request. */
  paths?: readonly string[];
  /** For measurements that are not autocannon against a URL (e.g. a plain query loop). */
  run?(seconds: number, connections: number): Promise<number>;
  /** The serving process, whose CPU time per request is reported beside the throughput. */
  server?: Pick<ServerProcess, 'cpuUs'>;
}

export interface Measured {
  name: string;
  /** Requests per second of each round. */
  rounds: number[];
  median: number;
  p99Ms: number;
  /** Server CPU time per request, microseconds (median over rounds); NaN when unknown. */
  cpuUsPerRequest: number;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

/** Warms each variant up once, then measures all of them `rounds` times, interleaved. Refusals fail the bench. */
export async function measure(variants: readonly Variant[], plan: LoadPlan): Promise<Map<string, Measured>> {
  const once = async (variant: Variant, seconds: number): Promise<LoadResult> => {
    if (variant.run) {
      const rps = await variant.run(seconds, plan.connections);
      return { requestsPerSecond: rps, total: rps * seconds, p99Ms: 0, errors: 0, non2xx: 0 };
    }
    const result = await load(variant.url as string, variant.headers ?? {}, seconds, plan.connections, variant.paths);
    if (result.errors > 0 || result.non2xx > 0) {
      throw new Error(`${variant.name}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
    }
    return result;
  };
  if (plan.warmUpSeconds > 0) for (const variant of variants) await once(variant, plan.warmUpSeconds);
  const results = new Map<string, { rps: number[]; p99: number[]; cpu: number[] }>(
    variants.map((v) => [v.name, { rps: [], p99: [], cpu: [] }]),
  );
  for (let round = 0; round < plan.rounds; round++) {
    for (const variant of variants) {
      const cpuBefore = (await variant.server?.cpuUs()) ?? Number.NaN;
      const result = await once(variant, plan.seconds);
      const cpu = ((await variant.server?.cpuUs()) ?? Number.NaN) - cpuBefore;
      const r = results.get(variant.name);
      r?.rps.push(result.requestsPerSecond);
      r?.p99.push(result.p99Ms);
      r?.cpu.push(cpu / result.total);
      process.stderr.write(`  ${variant.name}: ${Math.round(result.requestsPerSecond)} req/s\n`);
    }
  }
  return new Map(
    [...results].map(([name, r]) => [
      name,
      { name, rounds: r.rps, median: median(r.rps), p99Ms: median(r.p99), cpuUsPerRequest: median(r.cpu) },
    ]),
  );
}

/** Requests per second of `subject` over `baseline`, median of the per-round ratios (rounds ran side by side). */
export function ratio(subject: Measured, baseline: Measured): number {
  return median(subject.rounds.map((rps, i) => rps / (baseline.rounds[i] ?? Number.NaN)));
}

export const fmtInt = (n: number): string => (Number.isNaN(n) ? '-' : Math.round(n).toLocaleString('en'));
export const fmtRatio = (n: number): string => n.toFixed(2);

/** A markdown table. */
export function table(
  header: readonly string[],
  align: readonly ('l' | 'r')[],
  rows: readonly (readonly string[])[],
): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(align.map((a) => (a === 'r' ? '---:' : '---'))), ...rows.map(line)].join('\n');
}
