import type { DestinationStream } from 'pino';
import { loadConfig, type AppConfig } from '../config/load-config.js';
import { secretValues } from '../config/secret-values.js';
import type { SettingsInput } from '../config/settings-schema.js';
import { createLogger, type Logger } from '../logging/logger.js';

type Output = NodeJS.WritableStream & { isTTY?: boolean };

/** The outside world of one CLI invocation; tests pass their own. */
export interface CliIo {
  readonly stdout: Output;
  readonly stderr: Output;
  /** @defaultValue process.env (read by the config module only) */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
  /** Aborted on SIGINT/SIGTERM: stop taking new slices. */
  readonly signal?: AbortSignal;
  /** Where log lines go. @defaultValue standard error (pretty on a terminal) */
  readonly logDestination?: DestinationStream;
}

/** Options every command takes. */
export interface CommonOptions {
  readonly config?: string;
}

export function loadCliConfig(io: CliIo, options: CommonOptions, overrides?: SettingsInput, envOverrides?: Record<string, string>): AppConfig {
  return loadConfig({
    cwd: io.cwd,
    env: envOverrides ? { ...(io.env ?? process.env), ...envOverrides } : io.env,
    configFile: options.config,
    overrides,
  });
}

/**
 * The command's logger. On a terminal with a progress bar, routine per-slice lines would tear
 * the bar apart, so only warnings and worse are shown unless LOG_LEVEL asks for more.
 */
export function createCliLogger(config: AppConfig, io: CliIo, options: { progressBar?: boolean } = {}): Logger {
  const quietForBar = (options.progressBar ?? true) && Boolean(io.stderr.isTTY) && !io.logDestination && !config.env.LOG_LEVEL;
  const level = quietForBar && config.settings.log.level === 'info' ? 'warn' : config.settings.log.level;
  return createLogger({
    level,
    destination: io.logDestination,
    pretty: io.logDestination ? false : undefined,
    // The dashboard's token may come from a settings file too, where secretValues does not look.
    secrets: [...secretValues(config.env), config.settings.dashboard.token ?? undefined].filter((secret) => secret !== undefined),
  });
}
