import { escapeControlCharacters } from '../text/printable-text.js';

/**
 * Every error report-sync raises on purpose is a {@link SyncError} with a stable `code`.
 * Whether a code is worth retrying is decided in one place, {@link RETRYABLE_CODES},
 * so the in-process runner and the queue worker classify trouble the same way.
 */

export type SyncErrorCode =
  /** A setting in config/, the environment or a CLI flag is wrong. */
  | 'CONFIG_INVALID'
  /** The command line itself is wrong (unknown date, bad list). */
  | 'USAGE_INVALID'
  /** The identity provider refused the credentials (OAuth error such as invalid_grant). */
  | 'AUTH_REJECTED'
  /** The identity provider could not be reached or answered 5xx. */
  | 'AUTH_UNAVAILABLE'
  /** The export endpoint answered 401 even to a token issued moments ago because of a 401, within its lifetime. */
  | 'EXPORT_UNAUTHORIZED'
  | 'EXPORT_BAD_REQUEST'
  | 'EXPORT_FORBIDDEN'
  | 'EXPORT_NOT_FOUND'
  /** Any other 4xx the spec does not list. */
  | 'EXPORT_REJECTED'
  | 'EXPORT_SERVER_ERROR'
  | 'EXPORT_RATE_LIMITED'
  /** Connection reset, refused, or a body cut short. */
  | 'EXPORT_NETWORK'
  | 'EXPORT_TIMEOUT'
  /** The download is larger than `limits.maxDownloadBytes` (or a ZIP entry inflates past its limit). */
  | 'EXPORT_TOO_LARGE'
  /** The file cannot be read as the report it claims to be. */
  | 'FILE_INVALID'
  /** The warehouse is locked or unreachable for now. */
  | 'WAREHOUSE_UNAVAILABLE'
  /** The warehouse refused a statement (a write, or a read of a table not there) for a reason that will not go away by itself. */
  | 'WAREHOUSE_REJECTED'
  /**
   * A service a command needs at start (Redis, the warehouse) did not answer within
   * `startup.timeoutMs`: a one-shot command stops (exit 2) instead of hanging.
   */
  | 'SERVICE_UNREACHABLE'
  /**
   * The service answered 200 with no data for a slice the warehouse holds rows of: the rows are
   * kept (an empty answer never deletes data on its own) unless `warehouse.acceptEmptyRestatements`.
   */
  | 'EMPTY_RESTATEMENT'
  /**
   * The machine itself is in the way: the temporary or data directory is full, missing or not
   * writable. Retried (space may come back) while running; at start, a command stops (exit 2)
   * naming the setting or variable to change.
   */
  | 'LOCAL_STORAGE'
  /**
   * Redis refused to store more jobs: it reached its `maxmemory`. Queueing stops (exit 2) with
   * the count of slices queued so far; the rest need more memory or a shorter range.
   */
  | 'REDIS_FULL'
  /**
   * The file is well-formed but fails a data-quality check set to `fail` (weights, duplicate ISINs,
   * stale effective dates, values not above zero, a drop in rows): not loaded, the slice keeps its
   * earlier rows. Final: the same file fails again until it is restated or the setting changed.
   */
  | 'QUALITY_CHECK_FAILED'
  /** A wait (for the identity provider) was cut short by a shutdown; the slice is left as it was. */
  | 'INTERRUPTED'
  /**
   * Queue mode: the slice's workers died with it (crash, OOM kill, SIGKILL, or blocked past
   * `queue.lockDurationMs`) more than `queue.maxStalledCount` times. Final, so a file that kills
   * whoever reads it cannot stop the fleet one worker after another.
   */
  | 'WORKER_DIED'
  /** Something report-sync did not expect: a bug to report, not trouble to retry. */
  | 'UNEXPECTED';

/** Codes whose trouble may pass: the slice is tried again (with backoff) before its outcome is final. */
export const RETRYABLE_CODES: ReadonlySet<SyncErrorCode> = new Set<SyncErrorCode>([
  'AUTH_UNAVAILABLE',
  'EXPORT_SERVER_ERROR',
  'EXPORT_RATE_LIMITED',
  'EXPORT_NETWORK',
  'EXPORT_TIMEOUT',
  'WAREHOUSE_UNAVAILABLE',
  'EMPTY_RESTATEMENT',
  'LOCAL_STORAGE',
]);

/** Codes that make continuing pointless for every other slice as well: the run stops. */
export const FATAL_CODES: ReadonlySet<SyncErrorCode> = new Set<SyncErrorCode>([
  'CONFIG_INVALID',
  'USAGE_INVALID',
  'AUTH_REJECTED',
  'EXPORT_UNAUTHORIZED',
  'SERVICE_UNREACHABLE',
  'REDIS_FULL',
]);

export interface SyncErrorOptions {
  cause?: unknown;
  /**
   * The message is several lines of report-sync's own (a list of invalid settings): its line
   * breaks are kept, every other control character is still escaped. Never for upstream text.
   */
  multiline?: boolean;
  /** How long the upstream asked us to wait (Retry-After), in milliseconds. */
  retryAfterMs?: number;
}

/**
 * Base class of every deliberate error; `code` is stable, `message` says what to do. The message is
 * one line without control characters (unless `multiline`, for report-sync's own lists): it often
 * quotes the upstream and reaches terminals, logs, alerts and the ledger, where an escape sequence
 * or forged line must never arrive as such.
 */
export class SyncError extends Error {
  readonly code: SyncErrorCode;
  readonly retryAfterMs: number | undefined;

  constructor(code: SyncErrorCode, message: string, options: SyncErrorOptions = {}) {
    const shown = options.multiline ? message.split('\n').map(escapeControlCharacters).join('\n') : escapeControlCharacters(message);
    super(shown, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
  }

  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }

  get fatal(): boolean {
    return FATAL_CODES.has(this.code);
  }
}

export class ConfigError extends SyncError {
  constructor(message: string, options?: SyncErrorOptions) {
    super('CONFIG_INVALID', message, options);
  }
}

export class UsageError extends SyncError {
  constructor(message: string, options?: SyncErrorOptions) {
    super('USAGE_INVALID', message, options);
  }
}

/** Trouble at the identity provider (the token endpoint). */
export class AuthError extends SyncError {}

/** A non-200 answer or a failed transfer from the export endpoint. */
export class ExportError extends SyncError {
  readonly status: number | undefined;

  constructor(code: SyncErrorCode, message: string, options: SyncErrorOptions & { status?: number } = {}) {
    super(code, message, options);
    this.status = options.status;
  }
}

/** The file arrived but is not a readable report; names the file, the record and the column. */
export class FileFormatError extends SyncError {
  constructor(message: string, options?: SyncErrorOptions) {
    super('FILE_INVALID', message, options);
  }
}

export class WarehouseError extends SyncError {}

/**
 * Turns anything thrown into a SyncError. Unknown errors count as retryable network trouble only when
 * they look like it (socket codes); anything else is a bug or a surprise and is kept as permanent
 * so that it is reported, not hammered.
 */
export function toSyncError(error: unknown): SyncError {
  if (error instanceof SyncError) return error;
  const err = error instanceof Error ? error : new Error(String(error));
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) {
    return new ExportError('EXPORT_NETWORK', `network error (${code}): ${err.message}`, { cause: err });
  }
  return new SyncError('UNEXPECTED', `unexpected error: ${err.message}`, { cause: err });
}

/** Socket-level codes from Node and undici that mean "the transfer broke, try again". */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_ABORTED',
]);
