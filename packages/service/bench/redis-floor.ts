import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { ScriptStep } from '../src/access/limits/redis-scripts.js';
import { limitScripts, redisClientOptions } from './service.js';

// What one request's Redis round trip costs by itself: the limiter's own charge script (two lock keys
// and two counters, as a list page sends it) called from a client of the service's settings, with no
// HTTP around it. Once with one call in flight at a time, as requests that do not arrive together send
// them; once with ten in flight, which ioredis writes together and redis-server answers together. The
// redis-server's own CPU is read from /proc when it runs on this machine.

export interface RedisFloor {
  inFlight: number;
  callsPerSecond: number;
  clientCpuUs: number;
  /** null when redis-server is not a process of this machine. */
  serverCpuUs: number | null;
}

/** CPU time (user + system) of process `pid` so far, µs, or null when it is not readable here. */
function processCpuUs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime, in clock ticks of 10 ms (USER_HZ is 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return null;
  }
}

export async function redisFloor(redisUrl: string, seconds: number): Promise<RedisFloor[]> {
  const redis = new Redis(redisUrl, redisClientOptions(250));
  try {
    await new Promise((resolve) => redis.once('ready', resolve));
    const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    const prefix = `crmx-bench-floor-${randomUUID()}`;
    const scripts = limitScripts(redis);
    const locks = [`${prefix}:lock:firewall:127.0.0.1`, `${prefix}:lock:auth:ip:127.0.0.1`];
    const steps: ScriptStep[] = [
      { key: `${prefix}:quota:prn_Bench:2026-11-24`, rule: 'under', points: 100, limit: 1e12, seconds: 172_800 },
      { key: `${prefix}:items:prn_Bench`, rule: 'fits', points: 100, limit: 1e12, seconds: 60 },
    ];
    const results: RedisFloor[] = [];
    for (const inFlight of [1, 10]) {
      // Warm-up, then the measured second(s).
      const until = (ms: number) => performance.now() + ms;
      const run = async (end: number) => {
        let calls = 0;
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            while (performance.now() < end) {
              await scripts.charge(locks, Date.now(), steps);
              calls++;
            }
          }),
        );
        return calls;
      };
      await run(until(300));
      const cpu = process.cpuUsage();
      const server = processCpuUs(pid);
      const started = performance.now();
      const calls = await run(until(seconds * 1000));
      const ms = performance.now() - started;
      const used = process.cpuUsage(cpu);
      const serverAfter = processCpuUs(pid);
      results.push({
        inFlight,
        callsPerSecond: calls / (ms / 1000),
        clientCpuUs: (used.user + used.system) / calls,
        serverCpuUs: server === null || serverAfter === null ? null : (serverAfter - server) / calls,
      });
    }
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    return results;
  } finally {
    redis.disconnect();
  }
}
