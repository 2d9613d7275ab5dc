import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely';
import { classifyWarehouseError } from './classify-warehouse-error.js';
import { createTables } from './migrations/0001-create-tables.js';
import { ledgerErrorCode } from './migrations/0002-ledger-error-code.js';
import { indexReportLineNumber } from './migrations/0003-index-report-line-number.js';
import type { WarehouseDialect, WarehouseHandle } from './open-warehouse.js';

/**
 * The migrations, in order. Listed here rather than read from a folder so they work the same
 * from TypeScript sources, a bundle or a Docker image. Never edit a migration that has shipped:
 * add the next one.
 */
function migrationsFor(dialect: WarehouseDialect): Record<string, Migration> {
  return {
    '0001-create-tables': createTables(dialect),
    '0002-ledger-error-code': ledgerErrorCode(),
    '0003-index-report-line-number': indexReportLineNumber(dialect),
  };
}

/** Brings the warehouse schema up to date; safe to run any number of times, from any number of processes. */
export async function migrateWarehouse(warehouse: WarehouseHandle): Promise<{ applied: string[] }> {
  const provider: MigrationProvider = { getMigrations: async () => migrationsFor(warehouse.dialect) };
  const migrator = new Migrator({ db: warehouse.db, provider });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    // Kysely hands back whatever the driver threw: a server that is down or a database that does
    // not exist is not a migration that failed, and is said as what it is.
    throw classifyWarehouseError(result.error, failed ? `applying migration ${failed} to ${warehouse.location}` : `migrating ${warehouse.location}`);
  }
  return { applied: (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}
