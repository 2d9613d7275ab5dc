import { CompiledQuery, Migrator, type MigrationProvider, type MigrationResultSet } from 'kysely';
import type { EngineMigrateOptions, WarehouseHandle } from '../engine/warehouse-engine.js';

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
// The key is Kysely's own migration lock's: a report-sync of an earlier release, which takes it as
// a session lock through Kysely, and this one exclude each other during a rolling upgrade.
const TRY_LOCK = CompiledQuery.raw('select pg_try_advisory_xact_lock(3853314791062309107) as locked');
const LOCK = CompiledQuery.raw('select pg_advisory_xact_lock(3853314791062309107)');

/**
 * Every pending migration runs in one transaction that first takes an advisory transaction lock,
 * so processes migrating at once take turns: the others wait for the lock, then read a history that
 * lists everything. Nothing of it outlives the transaction (no session lock, no session setting),
 * which is what lets migrations run through PgBouncer in transaction pooling: the dialect's
 * migrator takes no lock of its own (see `PostgresWarehouseDialect`). The lock is taken before the
 * migrator creates its own tables, so two processes on a new database do not create them together.
 * A failure rolls back every migration of the run.
 */
export async function migrateHoldingPostgresLock(warehouse: WarehouseHandle, provider: MigrationProvider, options: EngineMigrateOptions): Promise<MigrationResultSet> {
  return warehouse.db.connection().execute(async (connection) => {
    await connection.executeQuery(BEGIN);
    try {
      const { rows } = await connection.executeQuery<{ locked: boolean }>(TRY_LOCK);
      if (rows[0]?.locked !== true) {
        const waitedFrom = performance.now();
        options.logger?.info({ warehouse: warehouse.location }, 'another process is migrating the warehouse: waiting for it to finish');
        await connection.executeQuery(LOCK);
        options.logger?.info({ warehouse: warehouse.location, waitedMs: Math.round(performance.now() - waitedFrom) }, 'took the migration lock');
      }
    } catch (error) {
      await connection.executeQuery(ROLLBACK).catch(() => undefined);
      throw error;
    }
    // The migrator runs on this connection, inside this transaction, and opens none of its own.
    const result = await new Migrator({ db: connection, provider, disableTransactions: true }).migrateToLatest();
    await connection.executeQuery(result.error ? ROLLBACK : COMMIT).catch(async (error: unknown) => {
      if (result.error) return;
      await connection.executeQuery(ROLLBACK).catch(() => undefined);
      throw error;
    });
    return result;
  });
}
