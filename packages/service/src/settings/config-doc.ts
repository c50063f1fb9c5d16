import type { TSchema } from 'typebox';
import { LIMITS_SCHEMA } from '../limits.js';
import { allowedOf, type Described, settingDefault } from './read-setting.js';
import { SETTINGS, type Setting, type SettingName } from './settings.js';

// The generated tables of docs/configuration.md: the settings and the limits, drawn from their schemas.

const cell = (text: string) => text.replaceAll('|', '\\|');

/** The settings table of docs/configuration.md, generated from SETTINGS. */
export function settingsTable(): string {
  const rows = (Object.keys(SETTINGS) as SettingName[]).map((name) => {
    const setting: Setting = SETTINGS[name];
    const fallback = settingDefault(name);
    return `| ${setting.flag ? `\`${setting.flag}\`` : ''} | ${setting.env ? `\`${setting.env}\`` : ''} | ${setting.usedBy} | ${cell(allowedOf(name))} | ${fallback === undefined ? '' : `\`${String(fallback)}\``} | ${cell(setting.help)}${setting.internal ? ' (not an operator setting)' : ''} |`;
  });
  return ['| Flag | Variable | Used by | Allowed | Default | Meaning |', '|---|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}

/** The limits table of docs/configuration.md, generated from LIMITS_SCHEMA. */
export function limitsTable(): string {
  const rows = Object.entries(LIMITS_SCHEMA.properties as Record<string, TSchema & Described>).map(
    ([name, schema]) =>
      `| \`${name}\` | ${schema.default} | ${schema.minimum}-${schema.maximum} | ${cell(String((schema as { description?: string }).description))} |`,
  );
  return ['| Name | Default | Allowed | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The document holding the generated tables, from the repository root. */
export const CONFIG_DOC_PATH = 'docs/configuration.md';

/** The generated blocks of the configuration document: marker name and table. */
export function generatedTables(): Record<'settings' | 'limits', string> {
  return { settings: settingsTable(), limits: limitsTable() };
}

/** The document with each `<!-- NAME:begin ... -->` ... `<!-- NAME:end -->` block replaced by its table. */
export function withGeneratedTables(doc: string): string {
  let out = doc;
  for (const [name, table] of Object.entries(generatedTables())) {
    const pattern = new RegExp(`(<!-- ${name}:begin[^\\n]*-->\\n)[\\s\\S]*?(<!-- ${name}:end -->)`);
    if (!pattern.test(out)) throw new Error(`${CONFIG_DOC_PATH} has no ${name}:begin/end markers`);
    out = out.replace(pattern, (_, begin: string, end: string) => `${begin}${table}\n${end}`);
  }
  return out;
}
