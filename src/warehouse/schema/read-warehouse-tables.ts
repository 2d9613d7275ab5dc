import type { WarehouseHandle } from '../engine/warehouse-engine.js';
import type { WarehouseTables } from '../engine/warehouse-tables.js';

/**
 * The tables report-sync's unqualified names reach, each with its columns' declared types, read
 * from the database's catalogue the way its engine knows to, `kysely_migration` included. Views
 * are left out: nothing can be loaded into one.
 */
export async function readWarehouseTables(warehouse: Pick<WarehouseHandle, 'db' | 'engine'>): Promise<WarehouseTables> {
  return warehouse.engine.readTables(warehouse.db);
}
