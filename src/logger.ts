import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import pretty from 'pino-pretty';
import { redactSecrets } from './redact-secrets.js';

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
  /** Where lines go (through pino-pretty first when `pretty`). @defaultValue standard error */
  destination?: DestinationStream;
  /**
   * Values censored wherever they appear in a line, message and stack included (the credentials
   * set in the environment). `Bearer …` values and labelled passwords are censored either way.
   */
  secrets?: readonly string[];
}

/**
 * The root logger: JSON lines on standard error (pretty on a terminal), secrets redacted twice:
 * by field name (pino's paths) and, as a net for text an upstream echoed into a message, by value
 * and pattern over each finished line.
 */
export function createLogger(options: LoggerOptions): Logger {
  const usePretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const output: DestinationStream = usePretty
    ? pretty({
        destination: (options.destination as NodeJS.WritableStream | undefined) ?? 2,
        sync: true,
        colorize: options.destination === undefined,
        ignore: 'pid,hostname',
        translateTime: 'SYS:HH:MM:ss.l',
      })
    : (options.destination ?? pino.destination({ dest: 2, sync: true }));
  const secrets = options.secrets ?? [];
  // The JSON line is censored before pino-pretty sees it, so both outputs get the same net.
  const destination: DestinationStream = { write: (line: string) => output.write(redactSecrets(line, secrets)) };
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
