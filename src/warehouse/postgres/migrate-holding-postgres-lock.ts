import { CompiledQuery, Migrator, type MigrationProvider, type MigrationResultSet } from 'kysely';
import { takeMigrationLock } from '../engine/take-migration-lock.js';
import type { EngineMigrateOptions, WarehouseHandle } from '../engine/warehouse-engine.js';

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
// The key is Kysely's own migration lock's: a report-sync of an earlier release, which takes it as
// a session lock through Kysely, and this one exclude each other during a rolling upgrade.
const TRY_LOCK = CompiledQuery.raw('select pg_try_advisory_xact_lock(3853314791062309107) as locked');

/**
 * Every pending migration runs in one transaction that first takes an advisory transaction lock,
 * so processes migrating at once take turns: the others wait for the lock, then read a history that
 * lists everything. Nothing of it outlives the transaction (no session lock, no session setting),
 * which is what lets migrations run through PgBouncer in transaction pooling: the dialect's
 * migrator takes no lock of its own (see `PostgresWarehouseDialect`). The lock is taken before the
 * migrator creates its own tables, so two processes on a new database do not create them together.
 * The lock is tried rather than waited for in Postgres (see `takeMigrationLock`), so a shutdown
 * ends the wait at once. A failure rolls back every migration of the run.
 */
export async function migrateHoldingPostgresLock(warehouse: WarehouseHandle, provider: MigrationProvider, options: EngineMigrateOptions): Promise<MigrationResultSet> {
  return warehouse.db.connection().execute(async (connection) => {
    await connection.executeQuery(BEGIN);
    try {
      const tryLock = async () => (await connection.executeQuery<{ locked: boolean }>(TRY_LOCK)).rows[0]?.locked === true;
      await takeMigrationLock(tryLock, warehouse.location, options);
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
