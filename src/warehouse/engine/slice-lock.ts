import type { Kysely } from 'kysely';
import type { Slice } from '../../slice/slice.js';
import type { Warehouse } from './warehouse-schema.js';

/**
 * How a transaction of slices begins and takes each slice's lock, so that two processes that reach
 * the same slice write it one after the other; one per open warehouse, made by its engine
 * (`WarehouseHandle.sliceLock`). Every lock is released by COMMIT or ROLLBACK.
 */
export interface SliceLock {
  /**
   * Begins a transaction on `connection` that slices' locks can then be taken in. `small`: every
   * slice it will take is small (see `CommitGroups`), so SQLite may keep the transaction's savepoint
   * journal in memory. Where the database admits one writer (SQLite), it waits for another
   * process's write to end: `onWait` is called once when it starts waiting, and `signal` ends the
   * wait at once (rejecting with an AbortError).
   */
  begin(connection: Kysely<Warehouse>, options?: { readonly small?: boolean; readonly signal?: AbortSignal; readonly onWait?: () => void }): Promise<void>;
  /**
   * Takes the slice's lock inside the transaction `begin` opened, waiting for it when `wait`.
   * @returns the warehouse's clock, read under the lock (see `warehouseNow`); undefined when `wait`
   *   is false and another transaction holds the lock
   */
  lock(connection: Kysely<Warehouse>, slice: Slice, wait: boolean): Promise<string | undefined>;
  /**
   * Upkeep after a transaction of slices committed, on its connection, before its slices' callers
   * hear of it (MySQL folds the ledger's monthly counts now and then). Its failure loses nothing:
   * the slices are committed, and the caller goes on as if it had not run.
   */
  afterCommit?(connection: Kysely<Warehouse>): Promise<void>;
}
