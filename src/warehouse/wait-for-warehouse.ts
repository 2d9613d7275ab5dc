import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { classifyWarehouseError } from './engine/classify-warehouse-error.js';
import type { WarehouseHandle } from './engine/warehouse-engine.js';

/** The first pause between two tries; it doubles up to {@link MAX_PAUSE_MS}. */
const FIRST_PAUSE_MS = 100;
const MAX_PAUSE_MS = 1_000;

/** pg's message when no connection was made within the pool's `connectionTimeoutMillis`. */
const NO_ANSWER = /timeout exceeded when trying to connect/i;

export interface WaitForWarehouseOptions {
  /** How long the server may refuse or not answer (`startup.timeoutMs`). */
  readonly timeoutMs: number;
  /** A shutdown: the wait ends at once with `INTERRUPTED`. */
  readonly signal?: AbortSignal;
  /** Where the wait is said, once when it begins and once when it ends. */
  readonly logger?: Logger;
  /**
   * The command writes (syncs, `migrate`): the query runs in a transaction, as every write does, so
   * that a connection pooler that allows none (PgBouncer's `pool_mode = statement`) stops it at
   * start with the setting to change (see `classifyWarehouseError`), rather than failing every
   * slice. Reading needs no transaction, and works through such a pooler. @defaultValue false
   */
  readonly writes?: boolean;
}

/**
 * Resolves once the warehouse answers a query (in a transaction, for a command that `writes`). A
 * server that refuses connections for now (not listening yet, "the database system is starting
 * up" or "shutting down", a restart during a deploy) is tried again with a short backoff for up
 * to `timeoutMs`, as Redis is waited for; then `SERVICE_UNREACHABLE` (exit 2), saying how long it
 * refused or that it never answered. Anything else fails at once: a database that does not exist,
 * an account the server refuses or a pooler that refuses transactions is `CONFIG_INVALID`, as
 * retrying cannot help.
 */
export async function waitForWarehouse(warehouse: WarehouseHandle, options: WaitForWarehouseOptions): Promise<void> {
  const startedAt = performance.now();
  const interrupted = (cause?: unknown) => new SyncError('INTERRUPTED', `stopped while waiting for the warehouse at ${warehouse.location} to accept connections`, { cause });
  for (let pauseMs = FIRST_PAUSE_MS, tries = 1; ; pauseMs = Math.min(pauseMs * 2, MAX_PAUSE_MS), tries += 1) {
    if (options.signal?.aborted) throw interrupted();
    let trouble: SyncError;
    try {
      const probe = options.writes ? warehouse.db.transaction().execute((trx) => sql`select 1`.execute(trx)) : sql`select 1`.execute(warehouse.db);
      await untilAborted(probe, options.signal);
      if (tries > 1) options.logger?.info({ warehouse: warehouse.location, waitedMs: Math.round(performance.now() - startedAt) }, 'the warehouse accepts connections again');
      return;
    } catch (error) {
      if (options.signal?.aborted) throw interrupted(error);
      trouble = classifyWarehouseError(error, `connecting to ${warehouse.location}`);
      if (trouble.code !== 'WAREHOUSE_UNAVAILABLE') throw trouble;
    }
    const waitedMs = performance.now() - startedAt;
    if (waitedMs >= options.timeoutMs || NO_ANSWER.test(trouble.message)) throw gaveUp(warehouse, trouble, waitedMs, options.timeoutMs);
    if (tries === 1) {
      options.logger?.warn(
        { warehouse: warehouse.location, problem: trouble.message, timeoutMs: options.timeoutMs },
        'the warehouse refuses connections (starting up, restarting or not yet listening): waiting for it up to startup.timeoutMs',
      );
    }
    try {
      // The last try comes at the timeout, not a pause before it.
      await sleep(Math.min(pauseMs, options.timeoutMs - waitedMs), undefined, { signal: options.signal });
    } catch (error) {
      throw interrupted(error);
    }
  }
}

/** The message says what happened: refused for so long, or no answer at all within the timeout. */
function gaveUp(warehouse: WarehouseHandle, trouble: SyncError, waitedMs: number, timeoutMs: number): SyncError {
  const what = NO_ANSWER.test(trouble.message)
    ? `did not answer within startup.timeoutMs (${timeoutMs} ms)`
    : `refused connections for ${(waitedMs / 1_000).toFixed(1)} s (startup.timeoutMs is ${timeoutMs} ms)`;
  return new SyncError('SERVICE_UNREACHABLE', `the warehouse at ${warehouse.location} ${what}: ${trouble.message}; check DATABASE_URL and that the database server is running`, {
    cause: trouble,
  });
}

/** `work`, or a rejection as soon as `signal` aborts (the query itself is left to the pool's own timeout). */
async function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
    work.catch(() => undefined);
  }
}
