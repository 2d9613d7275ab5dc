import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import pretty from 'pino-pretty';
import { censorSecretFields, secretRedactor } from '../redaction/redact.js';
import { SyncError } from '../errors/sync-error.js';

export type { Logger };

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
 * The root logger: JSON lines on stderr (pretty on a terminal), secrets redacted twice: by field
 * name ({@link censorSecretFields}, including child bindings) and, as a net for text an upstream
 * echoed, by value and pattern over each finished line.
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
  // Built once: the secrets' encoded forms are the same for every line.
  const redact = secretRedactor(options.secrets ?? []);
  // The JSON line is censored before pino-pretty sees it, so both outputs get the same net.
  const destination: DestinationStream = { write: (line: string) => output.write(inertControls(redact(line), usePretty)) };
  const logger = pino(
    {
      level: options.level,
      base: { service: 'report-sync' },
      serializers: { err: serializeError },
      // Every object a log call is given (the line's fields, or values for %j / %o) and every
      // child's bindings pass the field-name net before pino serialises them.
      hooks: {
        logMethod(args, method) {
          for (let i = 0; i < args.length; i += 1) if (typeof args[i] === 'object') args[i] = censorSecretFields(args[i]);
          method.apply(this, args);
        },
      },
      formatters: { bindings: (bindings) => censorSecretFields(bindings) },
    },
    destination,
  );
  // pino applies the bindings formatter to the root's bindings only; a child's are serialised as
  // given. Children inherit from the root (and from each other), so this covers every generation.
  const child = logger.child;
  logger.child = function censoredChild(this: Logger, bindings, childOptions) {
    return child.call(this, censorSecretFields(bindings), childOptions);
  } as Logger['child'];
  return logger;
}

/**
 * An error as a line carries it under `err`. An expected {@link SyncError} (not UNEXPECTED) is its
 * type, code, messages (causes' included) and plain fields, with no stack or carried data: the code
 * says where it came from. Anything else is a bug or surprise, logged with its stack and causes'.
 */
function serializeError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
  if (!(error instanceof SyncError) || error.code === 'UNEXPECTED') return serialized;
  const compact: Record<string, unknown> = { type: serialized.type, code: error.code, message: serialized.message };
  for (const [key, value] of Object.entries(serialized)) {
    if (key in compact || key === 'name' || key === 'stack' || key === 'raw' || key === 'aggregateErrors') continue;
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) compact[key] = value;
  }
  return compact;
}

/**
 * Every escape of a JSON string, left to right (so `\\` pairs are never split); the first group
 * holds the escapes of controls other than line feed and tab (which a pretty stack trace needs).
 */
const JSON_ESCAPE = /\\(u00(?:0[0-8bcef]|1[0-9a-f]|7f|[89][0-9a-f])|[rbf])|\\./gi;
/** Controls JSON leaves raw: DEL and C1 (a C1 CSI acts on some terminals as ESC [ does). */
const RAW_CONTROL = /[\u007f-\u009f]/g;

/**
 * A finished JSON line made inert for a terminal: DEL and C1 are escaped (JSON escapes only C0).
 * For pino-pretty, which prints strings as they are, escapes are escaped once more, so an escape
 * sequence an upstream sent arrives as the text `\u001b`, not as ESC.
 */
function inertControls(line: string, forPretty: boolean): string {
  const json = line.replace(RAW_CONTROL, (char) => `\\u00${char.charCodeAt(0).toString(16)}`);
  return forPretty ? json.replace(JSON_ESCAPE, (sequence, control: string | undefined) => (control ? `\\${sequence}` : sequence)) : json;
}
