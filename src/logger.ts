import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/**
 * Paths pino censors wherever they appear. The code never logs credentials or tokens on purpose;
 * this is the net under that rule, for objects that reach a log by accident (a request's headers,
 * an error's options).
 */
export const REDACTED_PATHS: readonly string[] = [
  'password',
  'clientSecret',
  'client_secret',
  'token',
  'accessToken',
  'access_token',
  'refresh_token',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.password',
  '*.clientSecret',
  '*.client_secret',
  '*.token',
  '*.accessToken',
  '*.access_token',
  '*.refresh_token',
  '*.authorization',
  '*.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'credentials',
  '*.credentials',
];

export interface LoggerOptions {
  level: LevelWithSilent;
  /** Human-readable lines (pino-pretty) instead of JSON. @defaultValue stderr is a terminal */
  pretty?: boolean;
  /** Where lines go. @defaultValue standard error */
  destination?: DestinationStream;
}

/** The root logger: JSON lines on standard error (pretty on a terminal), secrets redacted. */
export function createLogger(options: LoggerOptions): Logger {
  const usePretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const destination =
    options.destination ??
    (usePretty
      ? pretty({ destination: 2, sync: true, colorize: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' })
      : pino.destination({ dest: 2, sync: true }));
  return pino(
    {
      level: options.level,
      redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
      base: { service: 'report-sync' },
      serializers: { err: pino.stdSerializers.err },
    },
    destination,
  );
}
