import type { TSchema } from 'typebox';
import { DEFAULT_LIMITS, LIMIT_ORDER, LIMITS_SCHEMA, type Limits } from '../limits.js';
import { ConfigError } from './config-error.js';
import { allowedValues, checker, readSetting } from './read-setting.js';

/**
 * The limits a server runs with: the defaults, with any member overridden by the JSON object in
 * `CRM_EXPORT_LIMITS` (for example `{"itemsPerMinute":5000}`), each checked against its range and the rules
 * between limits, so a typo or an unsafe value never passes silently.
 */
export function readLimits(env: NodeJS.ProcessEnv = process.env): Limits {
  const raw = readSetting('limits', undefined, env);
  if (raw === undefined || raw.trim() === '') return DEFAULT_LIMITS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('CRM_EXPORT_LIMITS must be a JSON object (got text that is not JSON)');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`CRM_EXPORT_LIMITS must be a JSON object (got ${JSON.stringify(parsed)})`);
  }
  const known = LIMITS_SCHEMA.properties as Record<string, TSchema>;
  for (const [name, value] of Object.entries(parsed)) {
    // Own names only: `toString`, `constructor` or `__proto__` are found on every object's prototype.
    const schema = Object.hasOwn(known, name) ? known[name] : undefined;
    if (!schema) {
      throw new ConfigError(
        `CRM_EXPORT_LIMITS: unknown limit ${name} (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`,
      );
    }
    if (!checker(schema).Check(value)) {
      throw new ConfigError(
        `CRM_EXPORT_LIMITS: ${name} must be ${allowedValues(schema)} (got ${JSON.stringify(value)})`,
      );
    }
  }
  const limits = { ...DEFAULT_LIMITS, ...(parsed as Partial<Limits>) };
  for (const [smaller, larger, why] of LIMIT_ORDER) {
    if (limits[smaller] > limits[larger]) {
      throw new ConfigError(
        `CRM_EXPORT_LIMITS: ${smaller} (${limits[smaller]}) must not exceed ${larger} (${limits[larger]}): ${why}`,
      );
    }
  }
  return limits;
}
