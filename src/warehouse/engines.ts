import { mysqlEngine } from './mysql/mysql-engine.js';
import { postgresEngine } from './postgres/postgres-engine.js';
import { sqliteEngine } from './sqlite/sqlite-engine.js';
import type { WarehouseEngine } from './engine/warehouse-engine.js';

/**
 * Every warehouse dialect report-sync speaks, one engine each. The only module outside the dialect
 * folders that imports them: a new dialect is its folder and one line here.
 */
export const WAREHOUSE_ENGINES = [sqliteEngine, postgresEngine, mysqlEngine] as const;

/** The engine whose scheme starts `databaseUrl`, or undefined when none takes it. */
export function engineForUrl(databaseUrl: string): WarehouseEngine | undefined {
  return WAREHOUSE_ENGINES.find((engine) => engine.schemes.some((scheme) => databaseUrl.startsWith(scheme)));
}
