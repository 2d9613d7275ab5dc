import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { z } from 'zod';
import { ConfigError } from '../errors/sync-error.js';
import { packageFile } from '../runtime/package-file.js';
import { readDotEnvFile, type DotEnvNote } from './dot-env-file.js';
import { closestName } from './closest-name.js';
import { environmentSettings } from './environment-settings.js';
import { quoteSettingValue } from './quote-setting-value.js';
import { SECRET_SETTINGS } from './secret-values.js';
import { settingsSchema, type Settings, type SettingsInput } from './settings-schema.js';

/** The warehouse when `DATABASE_URL` is unset or blank. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/warehouse.sqlite';

/** Everything a command needs to know before it starts, validated once. */
export interface AppConfig {
  readonly settings: Settings;
  /** Variables from the process environment, over those of `.env` (if present). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `DATABASE_URL`, default `sqlite:./data/warehouse.sqlite`. */
  readonly databaseUrl: string;
  /**
   * `REDIS_URL`, default `redis://127.0.0.1:6379` (queue mode only); with `REDIS_CLUSTER_NODES` set,
   * its first node.
   */
  readonly redisUrl: string;
  /** `REDIS_CLUSTER_NODES`: when set, Redis is a cluster starting from these nodes and REDIS_URL's. */
  readonly redisClusterNodes: string | undefined;
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
  /**
   * Where a variable was set, as a message should name it: `.env line 4: REPORT_SYNC_CONCURRENCY`
   * for one read from a `.env` file (its path when outside the working directory), the name alone
   * for one from the real environment.
   */
  readonly variableSource: (name: string) => string;
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
 * Loads the layered configuration: defaults, the config folder's `default.json` (else the shipped
 * one) and `local.json`, the `--config`/`REPORT_SYNC_CONFIG` file, `LOG_LEVEL`, `REPORT_SYNC_*`
 * variables, then CLI flags. The folder is `REPORT_SYNC_CONFIG_DIR` or `./config`, so an install
 * reads the operator's files. Throws a {@link ConfigError} naming the bad key and its layer.
 */
export function loadConfig(options: LoadConfigOptions = {}): AppConfig {
  const cwd = options.cwd ?? process.cwd();
  const processEnv = options.env ?? process.env;
  const configDir = configFolder(processEnv, cwd);
  const { env, dotEnvNotes, dotEnvVariables, dotEnvLines } = layerEnvironment(processEnv, cwd, options.readDotEnv ?? true);
  const variableSource = (name: string): string => {
    const line = dotEnvLines.get(name);
    if (!line) return name;
    const inside = relative(cwd, line.file);
    const file = inside.startsWith('..') || isAbsolute(inside) ? line.file : inside;
    return `${file} line ${line.line}: ${name}`;
  };

  const layers: SettingsLayer[] = [];
  // A folder's own default.json stands in for the one report-sync ships (a project that keeps its
  // whole configuration, as this repository does); local.json is read from the folder either way.
  const ownDefaults = resolve(configDir, 'default.json');
  for (const file of [existsSync(ownDefaults) ? ownDefaults : packageFile('config/default.json'), resolve(configDir, 'local.json')]) {
    if (existsSync(file)) layers.push(readLayer(file));
  }
  const extraFile = options.configFile ?? env.REPORT_SYNC_CONFIG;
  if (extraFile) {
    const file = resolve(cwd, extraFile);
    if (!existsSync(file)) throw new ConfigError(`config file ${file} does not exist: check --config / REPORT_SYNC_CONFIG`);
    layers.push(readLayer(file));
  }
  if (env.LOG_LEVEL) layers.push({ source: 'LOG_LEVEL', values: { log: { level: env.LOG_LEVEL } } });
  const fromEnvironment = environmentSettings(env, variableSource);
  if (fromEnvironment.problems.length > 0) throw new ConfigError(`invalid settings:\n${fromEnvironment.problems.join('\n')}`, { multiline: true });
  layers.push(...fromEnvironment.layers);
  if (options.overrides) layers.push({ source: 'command-line flags', values: options.overrides as Record<string, unknown> });

  const merged = layers.reduce<Record<string, unknown>>((acc, layer) => deepMerge(acc, layer.values), {});
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error.issues, layers, merged, variableSource), { multiline: true });

  return {
    settings: parsed.data,
    env,
    databaseUrl: env.DATABASE_URL?.trim() || DEFAULT_DATABASE_URL,
    redisUrl: env.REDIS_URL?.trim() || defaultRedisUrl(env.REDIS_CLUSTER_NODES),
    redisClusterNodes: env.REDIS_CLUSTER_NODES?.trim() || undefined,
    sources: layers.map((layer) => layer.source),
    cwd,
    dotEnvNotes,
    layers,
    dotEnvVariables,
    variableSource,
  };
}

/**
 * REDIS_URL when unset: the local Redis, or the first node of REDIS_CLUSTER_NODES, so that a
 * cluster without a password or TLS needs no REDIS_URL (nor starts from a Redis it is not).
 */
function defaultRedisUrl(clusterNodes: string | undefined): string {
  const first = clusterNodes
    ?.split(',')
    .map((entry) => entry.trim())
    .find((entry) => entry !== '');
  return first ? `redis://${first}` : 'redis://127.0.0.1:6379';
}

/** The operator's configuration folder: `REPORT_SYNC_CONFIG_DIR` (from the real environment: `.env` may live in it), or `./config`. */
function configFolder(processEnv: Readonly<Record<string, string | undefined>>, cwd: string): string {
  const named = processEnv.REPORT_SYNC_CONFIG_DIR?.trim();
  if (!named) return resolve(cwd, 'config');
  const dir = resolve(cwd, named);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new ConfigError(`REPORT_SYNC_CONFIG_DIR names ${dir}, which is not a directory: point it at the folder holding local.json (and .env), or unset it`);
  }
  return dir;
}

/** The environment a command sees: `processEnv` over the variables of `.env` (if present and `readDotEnv`). */
export function readEnvironment(processEnv: Readonly<Record<string, string | undefined>>, cwd: string, readDotEnv: boolean): Record<string, string | undefined> {
  return layerEnvironment(processEnv, cwd, readDotEnv).env;
}

/**
 * {@link readEnvironment}, with the notes on `.env` values a rule changed that the real environment
 * does not replace. `.env` is read from the working directory and from `REPORT_SYNC_CONFIG_DIR`
 * (the working directory's wins where both set a variable).
 */
function layerEnvironment(
  processEnv: Readonly<Record<string, string | undefined>>,
  cwd: string,
  readDotEnv: boolean,
): { env: Record<string, string | undefined>; dotEnvNotes: DotEnvNote[]; dotEnvVariables: Set<string>; dotEnvLines: Map<string, { file: string; line: number }> } {
  const configDir = processEnv.REPORT_SYNC_CONFIG_DIR?.trim();
  const files = [...new Set([...(configDir ? [resolve(cwd, configDir, '.env')] : []), resolve(cwd, '.env')])].filter((file) => existsSync(file));
  if (!readDotEnv || files.length === 0) return { env: { ...processEnv }, dotEnvNotes: [], dotEnvVariables: new Set(), dotEnvLines: new Map() };
  let values: Record<string, string> = {};
  const lines = new Map<string, { file: string; line: number }>();
  const notes = new Map<string, DotEnvNote>();
  for (const file of files) {
    let fromFile: ReturnType<typeof readDotEnvFile>;
    try {
      fromFile = readDotEnvFile(file);
    } catch (error) {
      throw new ConfigError(`cannot read ${file}: ${(error as Error).message}`);
    }
    values = { ...values, ...fromFile.values };
    for (const name of Object.keys(fromFile.values)) {
      const line = fromFile.lines[name];
      if (line === undefined) lines.delete(name);
      else lines.set(name, { file, line });
    }
    for (const name of Object.keys(fromFile.values)) notes.delete(name);
    for (const note of fromFile.notes) notes.set(note.variable, note);
  }
  // The real environment wins, as with every dotenv tool: a deployment can override the file.
  // A variable present but undefined (as an embedding program may pass) does not hide the file's value.
  const set = Object.entries(processEnv).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const dotEnvVariables = new Set(Object.keys(values).filter((name) => processEnv[name] === undefined));
  return {
    env: { ...values, ...Object.fromEntries(set) },
    dotEnvNotes: [...notes.values()].filter((note) => processEnv[note.variable] === undefined),
    dotEnvVariables,
    dotEnvLines: new Map([...lines].filter(([name]) => dotEnvVariables.has(name))),
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

function describeIssues(issues: readonly z.core.$ZodIssue[], layers: readonly SettingsLayer[], merged: Record<string, unknown>, variableSource: (name: string) => string): string {
  const lines = issues.map((issue) => {
    const path = issue.path.map(String);
    const key = path.join('.') || '(top level)';
    // An unknown key is reported at its parent's path; the layer to blame is the one holding the key itself.
    const blamed = issue.code === 'unrecognized_keys' && issue.keys.length > 0 ? [...path, issue.keys[0]!] : path;
    const layer = [...layers].reverse().find((candidate) => hasPath(candidate.values, blamed));
    // A layer read from a variable is named where it was set: a `.env` line, or the environment.
    const from = layer ? ` (from ${isVariable(layer.source) ? variableSource(layer.source) : layer.source})` : '';
    return `  ${key}${from}: ${explainIssue(issue, path, merged)}`;
  });
  return `invalid settings:\n${lines.join('\n')}`;
}

/** The issue in words, with the value that was given and, where there is a list, what is allowed. */
function explainIssue(issue: z.core.$ZodIssue, path: readonly string[], merged: Record<string, unknown>): string {
  if (issue.code === 'unrecognized_keys') {
    const allowed = allowedKeysAt(path);
    const keys = issue.keys.map(quoteSettingValue).join(', ');
    const meant = allowed && issue.keys.length === 1 ? closestName(issue.keys[0]!, allowed) : undefined;
    const hint = meant ? `; did you mean ${quoteSettingValue(meant)}?` : allowed ? `; use one of ${allowed.join(', ')}` : '';
    return `unknown key${issue.keys.length > 1 ? 's' : ''} ${keys}${hint}`;
  }
  // A secret (the dashboard's token) is never quoted, not even when it is wrong.
  if (SECRET_SETTINGS.some((setting) => setting.key === path.join('.'))) return issue.message;
  const given = valueAt(merged, path);
  if (issue.code === 'invalid_value') {
    return `${quoteSettingValue(given)} is not allowed; use one of ${issue.values.map((value) => String(value)).join(', ')}`;
  }
  return given === undefined ? issue.message : `${issue.message} (got ${quoteSettingValue(given)})`;
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
  const def = schema?._zod.def as { type: string; shape?: Record<string, unknown>; keyType?: { _zod: { def: { type: string; entries?: Record<string, string> } } } } | undefined;
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

/** Whether a layer's source is a variable's name (`LOG_LEVEL`, `REPORT_SYNC_…`) rather than a file or the flags. */
function isVariable(source: string): boolean {
  return /^[A-Z][A-Z0-9_]*$/.test(source);
}

function hasPath(values: Record<string, unknown>, path: readonly string[]): boolean {
  let node: unknown = values;
  for (const part of path) {
    if (!isPlainObject(node) && !Array.isArray(node)) return false;
    // A flag the user did not pass is in its layer as undefined: that layer did not set it.
    if (!Object.hasOwn(node as object, part) || (node as Record<string, unknown>)[part] === undefined) return false;
    node = (node as Record<string, unknown>)[part];
  }
  return true;
}
