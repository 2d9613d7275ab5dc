import type { WarehouseHandle } from './engine/warehouse-engine.js';

/**
 * The warehouse's clock, as an ISO 8601 UTC time with milliseconds: the time every ledger row is
 * stamped with, and the start a `backfill --wait` counts outcomes from. One clock for all of them,
 * so workers whose clocks drift cannot make an outcome look older than the backfill that asked for
 * it. Which clock that is, its engine says (see `WarehouseEngine.now`).
 */
export async function warehouseNow(warehouse: Pick<WarehouseHandle, 'db' | 'engine'>): Promise<string> {
  return warehouse.engine.now(warehouse.db);
}
