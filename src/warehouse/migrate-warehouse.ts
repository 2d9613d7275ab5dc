import { Migrator, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely';
import { WarehouseError } from '../errors.js';
import { createTables } from './migrations/0001-create-tables.js';
import type { WarehouseDialect, WarehouseHandle } from './open-warehouse.js';

/**
 * The migrations, in order. Listed here rather than read from a folder so they work the same
 * from TypeScript sources, a bundle or a Docker image. Never edit a migration that has shipped:
 * add the next one.
 */
function migrationsFor(dialect: WarehouseDialect): Record<string, Migration> {
  return {
    '0001-create-tables': createTables(dialect),
  };
}

/** Brings the warehouse schema up to date; safe to run any number of times, from any number of processes. */
export async function migrateWarehouse(warehouse: WarehouseHandle): Promise<{ applied: string[] }> {
  const provider: MigrationProvider = { getMigrations: async () => migrationsFor(warehouse.dialect) };
  const migrator = new Migrator({ db: warehouse.db, provider });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new WarehouseError('WAREHOUSE_REJECTED', `migration ${failed} failed on ${warehouse.location}: ${String((result.error as Error).message ?? result.error)}`, {
      cause: result.error,
    });
  }
  return { applied: (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}
