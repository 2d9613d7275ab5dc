import { closestName } from './closest-name.js';
import type { SettingsLayer } from './load-config.js';
import { quoteSettingValue } from './quote-setting-value.js';
import { SETTING_VARIABLE_PREFIX, type SettingVariable, settingVariables } from './setting-variables.js';

/** Variables under the settings prefix that are not settings themselves. */
const OTHER_VARIABLES: ReadonlySet<string> = new Set(['REPORT_SYNC_CONFIG', 'REPORT_SYNC_CONFIG_DIR']);

/** The settings the environment gives, or the reasons it cannot. */
export interface EnvironmentSettings {
  /** One layer per variable set, named after it (so a validation message names the variable), in the schema's order. */
  readonly layers: readonly SettingsLayer[];
  /** One line per bad variable (`retry.attempts (from REPORT_SYNC_RETRY__ATTEMPTS): "abc" is not a number`). */
  readonly problems: readonly string[];
}

/**
 * Reads the `REPORT_SYNC_*` settings variables ({@link settingVariables}) into a layer typed as the
 * schema wants (booleans as true/false, 1/0, yes/no, on/off; lists comma-separated or JSON); blank
 * means unset. An unknown name with `__` or close to a setting's is a problem, never ignored: a typo
 * must not pass silently. `variableSource` names where a variable was set in those messages.
 */
export function environmentSettings(env: Readonly<Record<string, string | undefined>>, variableSource: (name: string) => string = (name) => name): EnvironmentSettings {
  const variables = settingVariables();
  const known = new Map(variables.map((variable) => [variable.name, variable]));
  const layers: SettingsLayer[] = [];
  const problems: string[] = [];
  for (const variable of variables) {
    const text = env[variable.name]?.trim();
    if (text === undefined || text === '') continue;
    const read = readValue(variable, text);
    if ('problem' in read) problems.push(`  ${variable.path.join('.')} (from ${variableSource(variable.name)}): ${read.problem}`);
    else layers.push({ source: variable.name, values: nest(variable.path, read.value) });
  }
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(SETTING_VARIABLE_PREFIX) || known.has(name) || OTHER_VARIABLES.has(name)) continue;
    if (env[name] === undefined) continue;
    const meant = closestName(name, known.keys());
    // A key path (`__`) or a near miss is a setting mistyped. Anything else under the prefix is
    // someone else's: Kubernetes gives every pod REPORT_SYNC_SERVICE_HOST, REPORT_SYNC_PORT… when
    // a Service is named report-sync, and refusing those would stop every command in the namespace.
    if (!name.includes('__') && meant === undefined) continue;
    problems.push(
      `  ${variableSource(name)}: not a setting variable${meant ? `; did you mean ${meant}?` : '; run report-sync config to see every setting, and docs/configuration.md for its variable'}`,
    );
  }
  return { layers, problems };
}

function readValue(variable: SettingVariable, text: string): { value: unknown } | { problem: string } {
  if (variable.nullable && text.toLowerCase() === 'null') return { value: null };
  switch (variable.kind) {
    case 'number':
      return readNumber(text);
    case 'boolean':
      return readBoolean(text);
    case 'string':
      return { value: text };
    case 'number-list':
    case 'string-list': {
      const items = readList(text);
      if ('problem' in items) return items;
      if (variable.kind === 'string-list') return { value: items.value.map(String) };
      const numbers: number[] = [];
      for (const item of items.value) {
        const read = typeof item === 'number' ? { value: item } : readNumber(String(item));
        if ('problem' in read) return { problem: `${JSON.stringify(String(item))} is not a number; give numbers separated by commas, such as "1001,1002"` };
        numbers.push(read.value);
      }
      return { value: numbers };
    }
  }
}

const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

function readNumber(text: string): { value: number } | { problem: string } {
  const compact = text.replaceAll('_', '');
  if (!NUMBER.test(compact)) return { problem: `${quoteSettingValue(text)} is not a number` };
  return { value: Number(compact) };
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

function readBoolean(text: string): { value: boolean } | { problem: string } {
  const lower = text.toLowerCase();
  if (TRUE.has(lower)) return { value: true };
  if (FALSE.has(lower)) return { value: false };
  return { problem: `${quoteSettingValue(text)} is not true or false` };
}

function readList(text: string): { value: unknown[] } | { problem: string } {
  if (!text.startsWith('['))
    return {
      value: text
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    };
  try {
    const parsed: unknown = JSON.parse(text);
    if (Array.isArray(parsed)) return { value: parsed };
  } catch {
    // said below
  }
  return { problem: `${quoteSettingValue(text)} is not a JSON array; give the items separated by commas, or as a JSON array` };
}

/** `{ a: { b: value } }` for the path `['a', 'b']`. */
function nest(path: readonly string[], value: unknown): Record<string, unknown> {
  let out: unknown = value;
  for (const key of [...path].reverse()) out = { [key]: out };
  return out as Record<string, unknown>;
}
