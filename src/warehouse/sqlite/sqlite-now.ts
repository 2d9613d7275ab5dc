import { CompiledQuery, type Kysely } from 'kysely';
import type { Warehouse } from '../engine/warehouse-schema.js';

const SQLITE_NOW = CompiledQuery.raw(`select strftime('%Y-%m-%dT%H:%M:%fZ', 'now') as now`);

/** SQLite's clock (see `warehouseNow`): the clock of the machine the file is on, the only one its processes can share. */
export async function sqliteNow(db: Kysely<Warehouse>): Promise<string> {
  const { rows } = await db.executeQuery<{ now: string }>(SQLITE_NOW);
  return new Date(rows[0]!.now).toISOString();
}
