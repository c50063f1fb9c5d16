import { InvalidArgumentError, Option } from 'commander';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';
import { ConfigError } from './config-error.js';
import { SETTINGS, type Setting, type SettingName, type SettingValue } from './settings.js';

// Reading a setting: the flag, else its environment variable, else the default, each checked against
// the setting's schema.

const checkers = new Map<TSchema, ReturnType<typeof Compile>>();
/** The compiled checker of a schema, compiled once. */
export function checker(schema: TSchema) {
  let found = checkers.get(schema);
  if (!found) {
    found = Compile(schema);
    checkers.set(schema, found);
  }
  return found;
}

/** The schema keywords the settings' words are drawn from. */
export interface Described {
  type?: string;
  minimum?: number;
  maximum?: number;
  anyOf?: { const?: unknown }[];
  default?: unknown;
}

/** The allowed values in words: `an integer 0-65535`, `one of a, b`, or the setting's own words. */
export function allowedValues(schema: TSchema, words?: string): string {
  const s = schema as Described;
  if (s.type === 'integer') return `an integer ${s.minimum}-${s.maximum}`;
  if (s.anyOf) return `one of ${s.anyOf.map((member) => String(member.const)).join(', ')}`;
  return words ?? 'text';
}

/** A setting's allowed values in words. */
export function allowedOf(name: SettingName): string {
  const setting: Setting = SETTINGS[name];
  return allowedValues(setting.schema, setting.allowed);
}

/** Validates (and converts) one raw value against the setting's schema; `source` names it in the error. */
export function parseSetting<N extends SettingName>(name: N, raw: string, source: string): SettingValue<N> {
  const setting: Setting = SETTINGS[name];
  const fail = () => new ConfigError(`${source} must be ${allowedOf(name)} (got ${JSON.stringify(raw)})`);
  let value: unknown = raw;
  if ((setting.schema as Described).type === 'integer') {
    if (!/^\d+$/.test(raw)) throw fail();
    value = Value.Convert(setting.schema, raw);
  }
  if (!checker(setting.schema).Check(value)) throw fail();
  return value as SettingValue<N>;
}

/** The schema's default, if it has one. */
export function settingDefault<N extends SettingName>(name: N): SettingValue<N> | undefined {
  return (SETTINGS[name].schema as Described).default as SettingValue<N> | undefined;
}

/**
 * A setting's value: the flag (already parsed by `settingOption`), else its environment variable (an empty
 * one counts as unset), else the schema's default, else undefined.
 */
export function readSetting<N extends SettingName>(
  name: N,
  flag?: SettingValue<N>,
  env: NodeJS.ProcessEnv = process.env,
): SettingValue<N> | undefined {
  if (flag !== undefined) return flag;
  const variable = (SETTINGS[name] as Setting).env;
  const raw = variable === undefined ? undefined : env[variable];
  if (raw !== undefined && raw !== '') return parseSetting(name, raw, variable as string);
  return settingDefault(name);
}

/** The commander option of a setting's flag: parsed with the same schema; flag-only settings get their default. */
export function settingOption(name: SettingName, help?: string): Option {
  const setting: Setting = SETTINGS[name];
  if (!setting.flag) throw new Error(`setting ${name} has no flag`);
  const flagName = setting.flag.split(' ')[0] as string;
  const fallback = settingDefault(name);
  // Commander prints the default of a flag-only setting itself.
  const fallbackWords = fallback === undefined ? '' : `, else ${String(fallback)}`;
  const defaultWords = setting.env ? `; default: ${setting.env}${fallbackWords}` : '';
  const text = `${help ?? setting.help} (${allowedOf(name)}${defaultWords})`;
  const option = new Option(setting.flag, text).argParser((raw: string) => {
    try {
      return parseSetting(name, raw, flagName);
    } catch (error) {
      throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
    }
  });
  // With an environment variable the default is applied by `readSetting`, after the variable.
  if (!setting.env && fallback !== undefined) option.default(fallback);
  return option;
}
