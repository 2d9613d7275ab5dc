import { CompiledQuery, type Kysely } from 'kysely';
import type { SliceLock } from './slice-lock.js';
import { warehouseNow } from './warehouse-now.js';
import type { Warehouse } from './warehouse-schema.js';

/** Takes SQLite's write lock at once, so the ledger reads that follow cannot be overtaken by another writer. */
const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');

/**
 * SQLite's {@link SliceLock}: the database's write lock (`BEGIN IMMEDIATE`), one writer at a time
 * whatever the slice; a writer waits for it up to the warehouse's busy timeout. Holding it, every
 * slice's lock is already held.
 */
export class SqliteSliceLock implements SliceLock {
  readonly oneWriterAtATime = true;

  async begin(connection: Kysely<Warehouse>): Promise<void> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
  }

  async lock(connection: Kysely<Warehouse>): Promise<string> {
    return warehouseNow(connection);
  }
}
