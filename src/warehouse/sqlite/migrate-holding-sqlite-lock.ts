import { CompiledQuery, Migrator, type MigrationProvider, type MigrationResultSet } from 'kysely';
import { SyncError, WarehouseError } from '../../errors/sync-error.js';
import type { EngineMigrateOptions, WarehouseHandle } from '../engine/warehouse-engine.js';

const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/**
 * Kysely takes no migration lock on SQLite (it assumes one process), so two processes starting on
 * a new file both found 0005 pending and the second failed on the columns the first had added.
 * Here every pending migration runs in one transaction holding SQLite's write lock (`BEGIN
 * IMMEDIATE`), which SQLite enforces across processes and releases when a process dies: the
 * others wait for it (up to `warehouse.busyTimeoutMs`, the event loop free, a shutdown ending the
 * wait), then read a history that lists everything. A failure rolls back every migration of the run.
 */
export async function migrateHoldingSqliteLock(warehouse: WarehouseHandle, provider: MigrationProvider, options: EngineMigrateOptions): Promise<MigrationResultSet> {
  const { signal, logger } = options;
  const waitedFrom = performance.now();
  let waited = false;
  try {
    await warehouse.sliceLock.begin(warehouse.db, {
      signal,
      onWait: () => {
        waited = true;
        logger?.info({ warehouse: warehouse.location }, 'another process is writing to the warehouse (migrating it, or loading): waiting for its write lock to migrate');
      },
    });
  } catch (error) {
    if (signal?.aborted) throw new SyncError('INTERRUPTED', `stopped while waiting for the write lock of ${warehouse.location} to migrate it`, { cause: error });
    if ((error as { code?: unknown }).code !== 'SQLITE_BUSY') throw error;
    throw new WarehouseError(
      'WAREHOUSE_UNAVAILABLE',
      `cannot migrate ${warehouse.location}: another process held its write lock for longer than warehouse.busyTimeoutMs (${Math.round(performance.now() - waitedFrom)} ms waited; ` +
        'another report-sync migrating a big warehouse, or a tool holding a write open): run report-sync migrate again when it is done, or raise warehouse.busyTimeoutMs',
      { cause: error },
    );
  }
  if (waited) logger?.info({ warehouse: warehouse.location, waitedMs: Math.round(performance.now() - waitedFrom) }, 'took the write lock to migrate');
  const result = await new Migrator({ db: warehouse.db, provider }).migrateToLatest();
  await warehouse.db.executeQuery(result.error ? ROLLBACK : COMMIT).catch(async (error: unknown) => {
    if (result.error) return;
    await warehouse.db.executeQuery(ROLLBACK).catch(() => undefined);
    throw error;
  });
  return result;
}
