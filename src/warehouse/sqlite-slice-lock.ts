import { CompiledQuery, type Kysely } from 'kysely';
import type { Slice } from '../slice.js';
import type { SliceLock } from './slice-lock.js';
import { warehouseNow } from './warehouse-now.js';
import type { Warehouse } from './warehouse-schema.js';

/** Takes SQLite's write lock at once, so the ledger read that follows cannot be overtaken by another writer. */
const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');

/**
 * SQLite's {@link SliceLock}: the database's write lock (`BEGIN IMMEDIATE`), one writer at a time
 * whatever the slice; a writer waits for it up to the warehouse's busy timeout.
 */
export class SqliteSliceLock implements SliceLock {
  async begin(connection: Kysely<Warehouse>, _slice: Slice): Promise<string> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
    return warehouseNow(connection);
  }
}
