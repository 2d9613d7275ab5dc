import { CompiledQuery, PostgresIntrospector, type Kysely } from 'kysely';
import type { Warehouse } from './schema/warehouse-schema.js';

const POSTGRES_NOW = CompiledQuery.raw('select now() as now');
const SQLITE_NOW = CompiledQuery.raw(`select strftime('%Y-%m-%dT%H:%M:%fZ', 'now') as now`);

/**
 * The warehouse's clock, as an ISO 8601 UTC time with milliseconds: the time every ledger row is
 * stamped with, and the start a `backfill --wait` counts outcomes from. One clock for all of them,
 * so workers whose clocks drift cannot make an outcome look older than the backfill that asked for
 * it. (In Postgres the server's clock, at the start of the transaction; in SQLite the clock of the
 * machine the file is on, the only one its processes can share.)
 */
export async function warehouseNow(db: Kysely<Warehouse>): Promise<string> {
  const postgres = db.introspection instanceof PostgresIntrospector;
  const { rows } = await db.executeQuery<{ now: Date | string }>(postgres ? POSTGRES_NOW : SQLITE_NOW);
  return new Date(rows[0]!.now).toISOString();
}
