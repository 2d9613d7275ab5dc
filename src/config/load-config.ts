import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { readDotEnvFile, type DotEnvNote } from './dot-env-file.js';
import { settingsSchema, type Settings, type SettingsInput } from './settings-schema.js';

/** The project's own `config/` folder, used when the working directory has none. */
const PACKAGE_CONFIG_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../config');

/** Everything a command needs to know before it starts, validated once. */
export interface AppConfig {
  readonly settings: Settings;
  /** Variables from the process environment, over those of `.env` (if present). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `DATABASE_URL`, default `sqlite:./data/warehouse.sqlite`. */
  readonly databaseUrl: string;
  /** `REDIS_URL`, default `redis://127.0.0.1:6379` (queue mode only). */
  readonly redisUrl: string;
  /** The files that were layered, in order, for messages and `--help`. */
  readonly sources: readonly string[];
  /** The working directory relative paths (a `sqlite:` file) are resolved against. */
  readonly cwd: string;
  /**
   * `.env` lines whose value a dotenv rule changed (an unquoted `#` cut it, a quote left open),
   * for variables the real environment does not set: said only when the upstream refuses them.
   */
  readonly dotEnvNotes: readonly DotEnvNote[];
  /** The settings layers that were merged, lowest first (defaults not included), for `report-sync config`. */
  readonly layers: readonly SettingsLayer[];
  /** The variables of {@link AppConfig.env} whose value came from `.env` (the real environment did not set them). */
  readonly dotEnvVariables: ReadonlySet<string>;
}

export interface LoadConfigOptions {
  /** Working directory whose `config/` and `.env` are read. @defaultValue process.cwd() */
  cwd?: string;
  /** The environment. @defaultValue process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** An extra settings file layered last (`--config`, or `REPORT_SYNC_CONFIG`). */
  configFile?: string;
  /** Settings from CLI flags: the top layer. */
  overrides?: SettingsInput;
  /** Read `.env` from the working directory. @defaultValue true */
  readDotEnv?: boolean;
}

/** One layer of settings: the file it was read from (or `LOG_LEVEL`, `command-line flags`) and what it sets. */
export interface SettingsLayer {
  readonly source: string;
  readonly values: Readonly<Record<string, unknown>>;
}

/**
 * Loads the layered configuration: defaults, then `config/default.json`, then `config/local.json`,
 * then the file named by `--config` or `REPORT_SYNC_CONFIG`, then `LOG_LEVEL`, then CLI flags.
 * Throws a {@link ConfigError} naming the bad key and the layer it came from.
 */
export function loadConfig(options: LoadConfigOptions = {}): AppConfig {
  const cwd = options.cwd ?? process.cwd();
  const { env, dotEnvNotes, dotEnvVariables } = layerEnvironment(options.env ?? process.env, cwd, options.readDotEnv ?? true);

  const configDir = existsSync(resolve(cwd, 'config/default.json')) ? resolve(cwd, 'config') : PACKAGE_CONFIG_DIR;
  const layers: SettingsLayer[] = [];
  for (const name of ['default.json', 'local.json']) {
    const file = resolve(configDir, name);
    if (existsSync(file)) layers.push(readLayer(file));
  }
  const extraFile = options.configFile ?? env.REPORT_SYNC_CONFIG;
  if (extraFile) {
    const file = resolve(cwd, extraFile);
    if (!existsSync(file)) throw new ConfigError(`config file ${file} does not exist: check --config / REPORT_SYNC_CONFIG`);
    layers.push(readLayer(file));
  }
  if (env.LOG_LEVEL) layers.push({ source: 'LOG_LEVEL', values: { log: { level: env.LOG_LEVEL } } });
  if (options.overrides) layers.push({ source: 'command-line flags', values: options.overrides as Record<string, unknown> });

  const merged = layers.reduce<Record<string, unknown>>((acc, layer) => deepMerge(acc, layer.values), {});
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error.issues, layers, merged), { multiline: true });

  return {
    settings: parsed.data,
    env,
    databaseUrl: env.DATABASE_URL?.trim() || 'sqlite:./data/warehouse.sqlite',
    redisUrl: env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379',
    sources: layers.map((layer) => layer.source),
    cwd,
    dotEnvNotes,
    layers,
    dotEnvVariables,
  };
}

/** The environment a command sees: `processEnv` over the variables of `cwd`'s `.env` (if present and `readDotEnv`). */
export function readEnvironment(
  processEnv: Readonly<Record<string, string | undefined>>,
  cwd: string,
  readDotEnv: boolean,
): Record<string, string | undefined> {
  return layerEnvironment(processEnv, cwd, readDotEnv).env;
}

/** {@link readEnvironment}, with the notes on `.env` values a rule changed that the real environment does not replace. */
function layerEnvironment(
  processEnv: Readonly<Record<string, string | undefined>>,
  cwd: string,
  readDotEnv: boolean,
): { env: Record<string, string | undefined>; dotEnvNotes: DotEnvNote[]; dotEnvVariables: Set<string> } {
  const dotEnvFile = resolve(cwd, '.env');
  if (!readDotEnv || !existsSync(dotEnvFile)) return { env: { ...processEnv }, dotEnvNotes: [], dotEnvVariables: new Set() };
  let fromFile: ReturnType<typeof readDotEnvFile>;
  try {
    fromFile = readDotEnvFile(dotEnvFile);
  } catch (error) {
    throw new ConfigError(`cannot read ${dotEnvFile}: ${(error as Error).message}`);
  }
  // The real environment wins, as with every dotenv tool: a deployment can override the file.
  // A variable present but undefined (as an embedding program may pass) does not hide the file's value.
  const set = Object.entries(processEnv).filter((entry): entry is [string, string] => entry[1] !== undefined);
  return {
    env: { ...fromFile.values, ...Object.fromEntries(set) },
    dotEnvNotes: fromFile.notes.filter((note) => processEnv[note.variable] === undefined),
    dotEnvVariables: new Set(Object.keys(fromFile.values).filter((name) => processEnv[name] === undefined)),
  };
}

function readLayer(file: string): SettingsLayer {
  let values: unknown;
  try {
    values = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    // V8 quotes the start of the text in its message; a settings file with a pasted secret must not be echoed.
    const reason = (error as Error).message.replace(/, (?:\.\.\.)?".*$/s, '');
    throw new ConfigError(`${file} is not valid JSON (${reason}); settings files hold JSON, secrets belong in the environment or .env`);
  }
  if (!isPlainObject(values)) throw new ConfigError(`${file} must hold a JSON object of settings`);
  return { source: file, values };
}

function deepMerge(base: Record<string, unknown>, top: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(top)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeIssues(issues: readonly z.core.$ZodIssue[], layers: readonly SettingsLayer[], merged: Record<string, unknown>): string {
  const lines = issues.map((issue) => {
    const path = issue.path.map(String);
    const key = path.join('.') || '(top level)';
    // An unknown key is reported at its parent's path; the layer to blame is the one holding the key itself.
    const blamed = issue.code === 'unrecognized_keys' && issue.keys.length > 0 ? [...path, issue.keys[0]!] : path;
    const layer = [...layers].reverse().find((candidate) => hasPath(candidate.values, blamed));
    const from = layer ? ` (from ${layer.source})` : '';
    return `  ${key}${from}: ${explainIssue(issue, path, merged)}`;
  });
  return `invalid settings:\n${lines.join('\n')}`;
}

/** The issue in words, with the value that was given and, where there is a list, what is allowed. */
function explainIssue(issue: z.core.$ZodIssue, path: readonly string[], merged: Record<string, unknown>): string {
  if (issue.code === 'unrecognized_keys') {
    const allowed = allowedKeysAt(path);
    const keys = issue.keys.map(quoteValue).join(', ');
    return `unknown key${issue.keys.length > 1 ? 's' : ''} ${keys}${allowed ? `; use one of ${allowed.join(', ')}` : ''}`;
  }
  const given = valueAt(merged, path);
  if (issue.code === 'invalid_value') {
    return `${quoteValue(given)} is not allowed; use one of ${issue.values.map((value) => String(value)).join(', ')}`;
  }
  return given === undefined ? issue.message : `${issue.message} (got ${quoteValue(given)})`;
}

/** A value as it may be shown: JSON (so control characters are escaped), cut short. */
function quoteValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

function valueAt(values: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = values;
  for (const part of path) {
    if (!isPlainObject(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** The keys the schema accepts at `path` (an object's properties, or a record's enum keys). */
function allowedKeysAt(path: readonly string[]): string[] | undefined {
  let schema: z.core.$ZodType | undefined = unwrap(settingsSchema);
  for (const part of path) {
    const def = schema?._zod.def as { type: string; shape?: Record<string, z.core.$ZodType> } | undefined;
    schema = def?.type === 'object' ? unwrap(def.shape?.[part]) : undefined;
  }
  const def = schema?._zod.def as
    | { type: string; shape?: Record<string, unknown>; keyType?: { _zod: { def: { type: string; entries?: Record<string, string> } } } }
    | undefined;
  if (def?.type === 'object' && def.shape) return Object.keys(def.shape);
  const keyDef = def?.type === 'record' ? def.keyType?._zod.def : undefined;
  if (keyDef?.type === 'enum' && keyDef.entries) return Object.values(keyDef.entries);
  return undefined;
}

/** Looks through defaults, prefaults and optionals to the schema they wrap. */
function unwrap(schema: z.core.$ZodType | undefined): z.core.$ZodType | undefined {
  let current = schema;
  while (current) {
    const def = current._zod.def as { type: string; innerType?: z.core.$ZodType };
    if (!['default', 'prefault', 'optional', 'nullable', 'readonly'].includes(def.type) || !def.innerType) return current;
    current = def.innerType;
  }
  return current;
}

function hasPath(values: Record<string, unknown>, path: readonly string[]): boolean {
  let node: unknown = values;
  for (const part of path) {
    if (!isPlainObject(node) && !Array.isArray(node)) return false;
    if (!(part in (node as object))) return false;
    node = (node as Record<string, unknown>)[part];
  }
  return true;
}
