import type { Kysely } from 'kysely';
import { postgresEngine } from './postgres/postgres-engine.js';
import type { Warehouse } from './schema/warehouse-schema.js';
import { sqliteEngine } from './sqlite/sqlite-engine.js';
import type { WarehouseEngine } from './warehouse-engine.js';

/**
 * Every warehouse dialect report-sync speaks, one engine each. The only module outside the dialect
 * folders that imports them: a new dialect is its folder and one line here.
 */
export const WAREHOUSE_ENGINES = [sqliteEngine, postgresEngine] as const;

/** The engine whose scheme starts `databaseUrl`, or undefined when none takes it. */
export function engineForUrl(databaseUrl: string): WarehouseEngine | undefined {
  return WAREHOUSE_ENGINES.find((engine) => engine.schemes.some((scheme) => databaseUrl.startsWith(scheme)));
}

/**
 * The engine that speaks `db`'s dialect, for code handed only a Kysely instance (the ledger, the
 * clock); a warehouse handle carries its engine already.
 */
export function engineOf(db: Kysely<Warehouse>): WarehouseEngine {
  const engine = WAREHOUSE_ENGINES.find((candidate) => candidate.speaks(db));
  if (engine === undefined)
    throw new Error(`the database is none of the warehouse dialects (${WAREHOUSE_ENGINES.map((known) => known.dialect).join(', ')}): open it with openWarehouse`);
  return engine;
}
