import { setTimeout as sleep } from 'node:timers/promises';
import { CompiledQuery, type Kysely } from 'kysely';
import type { SliceLock } from '../engine/slice-lock.js';
import { sqliteNow } from './sqlite-now.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/** Takes SQLite's write lock at once, so the ledger reads that follow cannot be overtaken by another writer. */
const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');
const NO_BUSY_WAIT = CompiledQuery.raw('pragma busy_timeout = 0');
/** Where SQLite keeps a transaction's savepoint journal (see `begin`): in memory, or in a temporary file past 64 KiB. */
const JOURNAL_IN_MEMORY = CompiledQuery.raw('pragma temp_store = memory');
const JOURNAL_ON_DISK = CompiledQuery.raw('pragma temp_store = default');

/** The longest pause between two tries for the write lock. */
const MAX_PAUSE_MS = 8;

/**
 * SQLite's {@link SliceLock}: the database's write lock (`BEGIN IMMEDIATE`), one writer at a time
 * whatever the slice. Holding it, every slice's lock is already held.
 *
 * While another process holds it, this one tries again every few milliseconds, for up to the
 * warehouse's busy timeout, with the event loop free in between: SQLite's own busy wait would
 * block the whole process (its downloads, its lock renewals) in sleeps of up to 100 ms (SQLite's
 * own back-off), which made two workers on one SQLite file slower than one.
 */
export class SqliteSliceLock implements SliceLock {
  readonly #busyTimeoutMs: number;
  readonly #restoreBusyWait: CompiledQuery;
  /** Whether the connection's temp_store is memory (as this lock last set it; a new connection has SQLite's default, a file). */
  #journalInMemory = false;

  /** @param busyTimeoutMs how long a writer waits for the lock (`warehouse.busyTimeoutMs`), the connection's busy timeout */
  constructor(busyTimeoutMs: number) {
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#restoreBusyWait = CompiledQuery.raw(`pragma busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
  }

  /**
   * `small`: the savepoint journal stays in memory for this transaction. SQLite writes the pages a
   * savepoint changes to that journal, a temporary file once it passes 64 KiB, which a slice's
   * savepoint did (its rows, the ledger's and slice_checks' index pages); kept in memory, small
   * slices spend much less time in SQLite (see docs/performance.md). Only for small slices, whose
   * pages in the journal are bounded (see `sqliteEngine.transactions`): a big slice's would all be
   * held in memory. SQLite reads the setting when a transaction begins, so it is set before BEGIN.
   */
  async begin(connection: Kysely<Warehouse>, options: { readonly small?: boolean; readonly signal?: AbortSignal; readonly onWait?: () => void } = {}): Promise<void> {
    const inMemory = options.small === true;
    if (inMemory !== this.#journalInMemory) {
      await connection.executeQuery(inMemory ? JOURNAL_IN_MEMORY : JOURNAL_ON_DISK);
      this.#journalInMemory = inMemory;
    }
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
        if (pauseMs === 1) options.onWait?.();
        await sleep(pauseMs, undefined, { signal: options.signal });
      }
    } finally {
      // Statements outside a write (reads during a checkpoint) still wait SQLite's way.
      await connection.executeQuery(this.#restoreBusyWait);
    }
  }

  async lock(): Promise<string> {
    // The write lock is the transaction's (BEGIN IMMEDIATE); the clock is read once it is held.
    return sqliteNow();
  }
}
