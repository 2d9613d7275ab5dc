import { isAbsolute, relative, resolve } from 'node:path';
import { describeEnvironment, type EnvironmentEntry } from '../config/describe-environment.js';
import type { AppConfig } from '../config/load-config.js';
import { SECRET_SETTINGS } from '../config/secret-values.js';
import { settingSources } from '../config/setting-sources.js';
import { SETTING_VARIABLE_PREFIX } from '../config/setting-variables.js';
import { loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { formatTable } from './format-table.js';

export interface ConfigOptions extends CommonOptions {
  readonly json?: boolean;
  /** As `run`, `nightly` and `worker` take it: shown as set by a command-line flag. */
  readonly concurrency?: number;
}

/**
 * `report-sync config`: the effective settings and environment variables, each with its source;
 * secrets only as set or unset, URLs with their password redacted. A diagnostic: it connects
 * nowhere and lists missing variables rather than failing; invalid settings still exit 2.
 */
export async function configCommand(options: ConfigOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const label = sourceLabeller(config, options);
  const secret = new Set(SECRET_SETTINGS.map((setting) => setting.key));
  const settings = settingSources(config).map((setting) => ({
    ...setting,
    // A secret setting is said to be set or not, like a secret variable.
    value: secret.has(setting.key) ? (setting.value === null || setting.value === undefined ? 'unset' : 'set') : setting.value,
    source: label(setting.source),
  }));
  const environment = describeEnvironment(config);

  if (options.json) {
    const output = {
      settings: Object.fromEntries(settings.map((setting) => [setting.key, { value: setting.value, source: setting.source }])),
      environment: Object.fromEntries(environment.map((entry) => [entry.name, { value: entry.value, source: entry.source }])),
    };
    io.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
    return 0;
  }

  const layers = ['default', ...config.layers.map((layer) => label(layer.source))].join(', ');
  const lines = [
    `Settings (layers, lowest first: ${layers}):`,
    '',
    formatTable(
      ['setting', 'value', 'source'],
      settings.map((setting) => [setting.key, typeof setting.value === 'string' ? setting.value : JSON.stringify(setting.value), setting.source]),
    ),
    '',
    'Environment (secrets only as set or unset; URLs with their password redacted):',
    '',
    formatTable(
      ['variable', 'value', 'source'],
      environment.map((entry) => [entry.name, entry.value, environmentSourceText(entry)]),
    ),
  ];
  io.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

/**
 * How a layer is named to the reader: files relative to the working directory when inside it, the
 * extra file with the option or variable that named it, a variable with where it was set (the
 * environment, or the `.env` line).
 */
function sourceLabeller(config: AppConfig, options: CommonOptions): (source: string) => string {
  const extraNamedBy = options.config ? '--config' : 'REPORT_SYNC_CONFIG';
  const extraFile = options.config ?? config.env.REPORT_SYNC_CONFIG;
  const extraPath = extraFile ? resolve(config.cwd, extraFile) : undefined;
  return (source) => {
    if (source === 'LOG_LEVEL' || source.startsWith(SETTING_VARIABLE_PREFIX)) {
      // `.env line 4: NAME` becomes `NAME (.env line 4)`, so that the column starts with the variable.
      const where = config.variableSource(source);
      return `${source} (${where === source ? 'environment' : where.slice(0, where.lastIndexOf(': '))})`;
    }
    if (!isAbsolute(source)) return source;
    const inside = relative(config.cwd, source);
    const shown = inside.startsWith('..') || isAbsolute(inside) ? source : inside;
    return source === extraPath ? `${shown} (${extraNamedBy})` : shown;
  };
}

function environmentSourceText(entry: EnvironmentEntry): string {
  // A blank value counts as unset, but where the blank line is matters to whoever fixes it.
  if (entry.value === 'unset' && entry.source !== null) return `${entry.source} (blank)`;
  return entry.source ?? '';
}
