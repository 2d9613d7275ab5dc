import type { Kysely } from 'kysely';
import type { Slice } from '../slice.js';
import type { Warehouse } from './warehouse-schema.js';

/**
 * How a slice's transaction begins and takes the slice's lock, so that two processes that reach
 * the same slice write it one after the other; one per warehouse, chosen when it is opened:
 * {@link SqliteSliceLock} or {@link PostgresSliceLock}. The lock is released by COMMIT or ROLLBACK.
 */
export interface SliceLock {
  /**
   * Begins a transaction on `connection` holding the slice's lock.
   * @returns the warehouse's clock, read under the lock (see `warehouseNow`)
   */
  begin(connection: Kysely<Warehouse>, slice: Slice): Promise<string>;
}
