import { CompiledQuery, Migrator, type MigrationProvider, type MigrationResultSet } from 'kysely';
import { takeMigrationLock } from '../engine/take-migration-lock.js';
import type { EngineMigrateOptions, WarehouseHandle } from '../engine/warehouse-engine.js';

// The name is Kysely's own migration lock's: a report-sync of an earlier release, which waits for it
// through Kysely, and this one exclude each other during a rolling upgrade.
const TRY_LOCK = CompiledQuery.raw("select get_lock('ea586330-2c93-47c8-908d-981d9d270f9d', 0) as locked");
const RELEASE_LOCK = CompiledQuery.raw("do release_lock('ea586330-2c93-47c8-908d-981d9d270f9d')");

/**
 * The pending migrations run on one connection that first takes the named migration lock, so
 * processes migrating at once take turns: the others wait for the lock, then read a history that
 * lists everything. The lock is tried rather than waited for in the server (see
 * `takeMigrationLock`), so a shutdown ends the wait at once. Kysely's migrator then takes the same
 * lock again on the same session, which a session may (it counts them), and lets go of its own
 * count; this one is let go of after. A killed process's lock goes with its session. MySQL has no
 * transactional DDL: a failed migration leaves the ones before it applied.
 */
export async function migrateHoldingMysqlLock(warehouse: WarehouseHandle, provider: MigrationProvider, options: EngineMigrateOptions): Promise<MigrationResultSet> {
  return warehouse.db.connection().execute(async (connection) => {
    const tryLock = async () => Number((await connection.executeQuery<{ locked: number | string | null }>(TRY_LOCK)).rows[0]?.locked) === 1;
    await takeMigrationLock(tryLock, warehouse.location, options);
    try {
      return await new Migrator({ db: connection, provider }).migrateToLatest();
    } finally {
      await connection.executeQuery(RELEASE_LOCK);
    }
  });
}
