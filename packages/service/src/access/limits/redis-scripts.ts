import type { Redis } from 'ioredis';

// The two Lua scripts that let a request's limits cost one Redis round trip (docs/limits.md, "One round
// trip"). They read and write the keys rate-limiter-flexible and the locks use (a counter is an integer with
// the window as its expiry, a lock holds the clock time it ends), so processes of the previous version can
// run beside them. ioredis sends each by EVALSHA and loads it again when Redis has forgotten it.

// KEYS: the locks, then one counter per step. ARGV: the number of locks, the service clock (ms), then per step
// its rule (`fits`: the total after stays within the limit; `under`: the total before is under it; `read`:
// takes nothing), points, limit and window seconds. Nothing is written unless every lock is clear and every
// step fits. The adds are rate-limiter-flexible's own (set 0 with the window if absent, INCRBY, restore a lost
// expiry), so the totals match what its script would have returned.
const CHARGE = `
local nlocks = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
for i = 1, nlocks do
  local untilMs = redis.call('get', KEYS[i])
  if untilMs and tonumber(untilMs) > now then return {'lock', i} end
end
local nsteps = #KEYS - nlocks
for s = 1, nsteps do
  local key, a = KEYS[nlocks + s], 2 + (s - 1) * 4
  local rule, points, limit = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local before = tonumber(redis.call('get', key) or '0')
  if (rule == 'under' and before >= limit) or (rule == 'fits' and before + points > limit) then
    local ttl = redis.call('pttl', key)
    if ttl < 0 then ttl = 1000 * tonumber(ARGV[a + 4]) end
    return {'refused', s, ttl}
  end
end
local out = {'ok'}
for s = 1, nsteps do
  local key, a = KEYS[nlocks + s], 2 + (s - 1) * 4
  local rule, points, seconds = ARGV[a + 1], ARGV[a + 2], ARGV[a + 4]
  local consumed, ttl
  if rule == 'read' then
    consumed = tonumber(redis.call('get', key) or '0')
    ttl = redis.call('pttl', key)
  else
    redis.call('set', key, 0, 'EX', seconds, 'NX')
    consumed = redis.call('incrby', key, points)
    ttl = redis.call('pttl', key)
    if ttl == -1 then
      redis.call('expire', key, seconds)
      ttl = 1000 * tonumber(seconds)
    end
  end
  out[#out + 1] = consumed
  out[#out + 1] = ttl
end
return out
`;

// KEYS: counters. ARGV: per key, points (negative gives back) and window seconds. A give-back never leaves a
// total below zero: a window that ended between the take and the give-back must not start in credit.
const ADJUST = `
for i = 1, #KEYS do
  local key, points, seconds = KEYS[i], tonumber(ARGV[2 * i - 1]), ARGV[2 * i]
  redis.call('set', key, 0, 'EX', seconds, 'NX')
  local consumed = redis.call('incrby', key, points)
  if redis.call('pttl', key) == -1 then redis.call('expire', key, seconds) end
  if points < 0 and consumed < 0 then redis.call('incrby', key, -consumed) end
end
return 1
`;

// The lease script (lease-table.ts): the charge script's lock checks, then per step a slice of the window.
// KEYS: the locks, then one counter per step. ARGV: the number of locks, the service clock (ms), then per step
// its rule, the points it needs now, the points it asks for (the need plus the slice), the limit and the
// window seconds. A step that needs nothing takes nothing and reports its window. The need decides, as in the
// charge script (`fits`: the total after it stays within the limit; `under`: the total before is under it);
// the slice is then cut to what the limit leaves, never below the need. Nothing is written unless every
// lock is clear and every need passes. Answer per step: points granted, total after, window ttl (ms).
const LEASE = `
local nlocks = tonumber(ARGV[1])
for i = 1, nlocks do
  local untilMs = redis.call('get', KEYS[i])
  if untilMs and tonumber(untilMs) > tonumber(ARGV[2]) then return {'lock', i} end
end
local nsteps = #KEYS - nlocks
for s = 1, nsteps do
  local key, a = KEYS[nlocks + s], 2 + (s - 1) * 5
  local rule, need, limit = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 4])
  if need > 0 then
    local before = tonumber(redis.call('get', key) or '0')
    if (rule == 'under' and before >= limit) or (rule == 'fits' and before + need > limit) then
      local ttl = redis.call('pttl', key)
      if ttl < 0 then ttl = 1000 * tonumber(ARGV[a + 5]) end
      return {'refused', s, ttl}
    end
  end
end
local out = {'ok'}
for s = 1, nsteps do
  local key, a = KEYS[nlocks + s], 2 + (s - 1) * 5
  local need, ask, limit, seconds = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), ARGV[a + 5]
  local granted, consumed, ttl = 0, 0, 0
  if need > 0 then
    local before = tonumber(redis.call('get', key) or '0')
    granted = math.max(need, math.min(ask, limit - before))
    redis.call('set', key, 0, 'EX', seconds, 'NX')
    consumed = redis.call('incrby', key, granted)
    ttl = redis.call('pttl', key)
    if ttl == -1 then
      redis.call('expire', key, seconds)
      ttl = 1000 * tonumber(seconds)
    end
  else
    consumed = tonumber(redis.call('get', key) or '0')
    ttl = redis.call('pttl', key)
  end
  out[#out + 1] = granted
  out[#out + 1] = consumed
  out[#out + 1] = ttl
end
return out
`;

// KEYS: counters. ARGV: per key, points a lease hands back and the longest ttl its window can have left (ms).
// A window with a longer ttl is a later one, and an absent key a window that ended: neither is credited.
const RETURN = `
for i = 1, #KEYS do
  local key, points, maxTtl = KEYS[i], tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local ttl = redis.call('pttl', key)
  if ttl > 0 and ttl <= maxTtl then
    local consumed = redis.call('incrby', key, -points)
    if consumed < 0 then redis.call('incrby', key, -consumed) end
  end
end
return 1
`;

// KEYS: the lock. ARGV: the clock time it ends, its ttl (ms), the channel every process's lock mirror listens
// on. The lock and its notice in one step, so no process can read the one without the other following.
const LOCK = `
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
return redis.call('publish', ARGV[3], KEYS[1] .. ' ' .. ARGV[1] .. ' ' .. ARGV[2])
`;

/** One counter's part in a lease script: the points needed now and asked for (the need plus a slice). */
export interface LeaseStep {
  key: string;
  rule: 'fits' | 'under' | 'read';
  need: number;
  ask: number;
  limit: number;
  seconds: number;
}

/** What the lease script answered: the lock that holds, the step refused, or each step's grant and window. */
export type LeaseAnswer =
  | { kind: 'lock'; index: number }
  | { kind: 'refused'; index: number; msBeforeNext: number }
  | { kind: 'ok'; grants: { granted: number; consumed: number; pttl: number }[] };

/** One counter's part in a charge script. */
export interface ScriptStep {
  key: string;
  rule: 'fits' | 'under' | 'read';
  points: number;
  limit: number;
  seconds: number;
}

/** What the charge script answered: the lock that holds, the step refused, or each step's total and window. */
export type ScriptAnswer =
  | { kind: 'lock'; index: number }
  | { kind: 'refused'; index: number; msBeforeNext: number }
  | { kind: 'ok'; windows: { consumed: number; pttl: number }[] };

interface ScriptCommands {
  crmxCharge(numberOfKeys: number, ...args: (string | number)[]): Promise<(string | number)[]>;
  crmxAdjust(numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>;
  crmxLease(numberOfKeys: number, ...args: (string | number)[]): Promise<(string | number)[]>;
  crmxReturn(numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>;
  crmxLock(key: string, ...args: (string | number)[]): Promise<number>;
}

/** The scripts on `redis` (defined once per client). */
export function limitScripts(redis: Redis) {
  const client = redis as Redis & Partial<ScriptCommands>;
  if (typeof client.crmxCharge !== 'function') {
    redis.defineCommand('crmxCharge', { lua: CHARGE });
    redis.defineCommand('crmxAdjust', { lua: ADJUST });
    redis.defineCommand('crmxLease', { lua: LEASE });
    redis.defineCommand('crmxReturn', { lua: RETURN });
    redis.defineCommand('crmxLock', { lua: LOCK, numberOfKeys: 1 });
  }
  const commands = client as Redis & ScriptCommands;
  return {
    async charge(lockKeys: readonly string[], now: number, steps: readonly ScriptStep[]): Promise<ScriptAnswer> {
      const args: (string | number)[] = [...lockKeys, ...steps.map((s) => s.key), lockKeys.length, now];
      for (const s of steps) args.push(s.rule, s.points, s.limit, s.seconds);
      const reply = await commands.crmxCharge(lockKeys.length + steps.length, ...args);
      if (reply[0] === 'lock') return { kind: 'lock', index: Number(reply[1]) - 1 };
      if (reply[0] === 'refused')
        return { kind: 'refused', index: Number(reply[1]) - 1, msBeforeNext: Number(reply[2]) };
      const windows = steps.map((_s, i) => ({ consumed: Number(reply[1 + 2 * i]), pttl: Number(reply[2 + 2 * i]) }));
      return { kind: 'ok', windows };
    },
    adjust(changes: readonly { key: string; points: number; seconds: number }[]): Promise<unknown> {
      const args: (string | number)[] = changes.map((c) => c.key);
      for (const c of changes) args.push(c.points, c.seconds);
      return commands.crmxAdjust(changes.length, ...args);
    },
    async lease(lockKeys: readonly string[], now: number, steps: readonly LeaseStep[]): Promise<LeaseAnswer> {
      const args: (string | number)[] = [...lockKeys, ...steps.map((s) => s.key), lockKeys.length, now];
      for (const s of steps) args.push(s.rule, s.need, s.ask, s.limit, s.seconds);
      const reply = await commands.crmxLease(lockKeys.length + steps.length, ...args);
      if (reply[0] === 'lock') return { kind: 'lock', index: Number(reply[1]) - 1 };
      if (reply[0] === 'refused')
        return { kind: 'refused', index: Number(reply[1]) - 1, msBeforeNext: Number(reply[2]) };
      const grants = steps.map((_s, i) => ({
        granted: Number(reply[1 + 3 * i]),
        consumed: Number(reply[2 + 3 * i]),
        pttl: Number(reply[3 + 3 * i]),
      }));
      return { kind: 'ok', grants };
    },
    /** Hands lease points back to the window they came from (a later or ended window is not credited). */
    giveBackLeased(changes: readonly { key: string; points: number; maxTtlMs: number }[]): Promise<unknown> {
      const args: (string | number)[] = changes.map((c) => c.key);
      for (const c of changes) args.push(c.points, Math.floor(c.maxTtlMs));
      return commands.crmxReturn(changes.length, ...args);
    },
    /** Sets a lock and tells every lock mirror (lock-mirror.ts); answers how many listened. */
    lock(key: string, untilMs: number, ttlMs: number, channel: string): Promise<number> {
      return commands.crmxLock(key, untilMs, Math.max(1, Math.ceil(ttlMs)), channel);
    },
  };
}

export type LimitScripts = ReturnType<typeof limitScripts>;
