import { setTimeout as sleep } from 'node:timers/promises';
import { CompiledQuery, type Kysely } from 'kysely';
import type { SliceLock } from './slice-lock.js';
import { warehouseNow } from './warehouse-now.js';
import type { Warehouse } from './warehouse-schema.js';

/** Takes SQLite's write lock at once, so the ledger reads that follow cannot be overtaken by another writer. */
const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');
const NO_BUSY_WAIT = CompiledQuery.raw('pragma busy_timeout = 0');

/** The longest pause between two tries for the write lock. */
const MAX_PAUSE_MS = 8;

/**
 * SQLite's {@link SliceLock}: the database's write lock (`BEGIN IMMEDIATE`), one writer at a time
 * whatever the slice. Holding it, every slice's lock is already held.
 *
 * While another process holds it, this one tries again every few milliseconds, for up to the
 * warehouse's busy timeout, with the event loop free in between: SQLite's own busy wait would
 * block the whole process (its downloads, its lock renewals) in sleeps of up to 100 ms, which made
 * two workers on one SQLite file slower than one.
 */
export class SqliteSliceLock implements SliceLock {
  readonly oneWriterAtATime = true;
  readonly #busyTimeoutMs: number;
  readonly #restoreBusyWait: CompiledQuery;

  /** @param busyTimeoutMs how long a writer waits for the lock (`warehouse.busyTimeoutMs`), the connection's busy timeout */
  constructor(busyTimeoutMs: number) {
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#restoreBusyWait = CompiledQuery.raw(`pragma busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
  }

  async begin(connection: Kysely<Warehouse>): Promise<void> {
    const deadline = performance.now() + this.#busyTimeoutMs;
    await connection.executeQuery(NO_BUSY_WAIT);
    try {
      for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, MAX_PAUSE_MS)) {
        try {
          await connection.executeQuery(BEGIN_IMMEDIATE);
          return;
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || performance.now() >= deadline) throw error;
        }
        await sleep(pauseMs);
      }
    } finally {
      // Statements outside a write (reads during a checkpoint) still wait SQLite's way.
      await connection.executeQuery(this.#restoreBusyWait);
    }
  }

  async lock(connection: Kysely<Warehouse>): Promise<string> {
    return warehouseNow(connection);
  }
}
