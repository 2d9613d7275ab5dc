import { CompiledQuery, Migrator, type Kysely, type MigrationProvider, type MigrationResultSet } from 'kysely';
import { setTimeout as sleep } from 'node:timers/promises';
import { SyncError } from '../../errors/sync-error.js';
import type { EngineMigrateOptions, WarehouseHandle } from '../engine/warehouse-engine.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
// The key is Kysely's own migration lock's: a report-sync of an earlier release, which takes it as
// a session lock through Kysely, and this one exclude each other during a rolling upgrade.
const TRY_LOCK = CompiledQuery.raw('select pg_try_advisory_xact_lock(3853314791062309107) as locked');

/** How often the lock is tried again while another process migrates, and how often the wait is said. */
const TRY_AGAIN_MS = 250;
const SAY_STILL_WAITING_MS = 30_000;

/**
 * Every pending migration runs in one transaction that first takes an advisory transaction lock,
 * so processes migrating at once take turns: the others wait for the lock, then read a history that
 * lists everything. Nothing of it outlives the transaction (no session lock, no session setting),
 * which is what lets migrations run through PgBouncer in transaction pooling: the dialect's
 * migrator takes no lock of its own (see `PostgresWarehouseDialect`). The lock is taken before the
 * migrator creates its own tables, so two processes on a new database do not create them together.
 * The lock is tried every quarter second rather than waited for in Postgres, so a shutdown ends
 * the wait at once and a long wait is said every half minute; a migration over a big warehouse
 * (rebuilding an index) may rightly take long, so there is no limit. A failure rolls back every
 * migration of the run.
 */
export async function migrateHoldingPostgresLock(warehouse: WarehouseHandle, provider: MigrationProvider, options: EngineMigrateOptions): Promise<MigrationResultSet> {
  return warehouse.db.connection().execute(async (connection) => {
    await connection.executeQuery(BEGIN);
    try {
      await takeMigrationLock(connection, warehouse.location, options);
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

/** Tries the migration lock until it is free, saying so while it waits; a shutdown ends the wait with `INTERRUPTED`. */
async function takeMigrationLock(connection: Kysely<Warehouse>, location: string, options: EngineMigrateOptions): Promise<void> {
  const { signal, logger } = options;
  const locked = async () => (await connection.executeQuery<{ locked: boolean }>(TRY_LOCK)).rows[0]?.locked === true;
  if (await locked()) return;
  const waitedFrom = performance.now();
  const waitedMs = () => Math.round(performance.now() - waitedFrom);
  logger?.info({ warehouse: location }, 'another process is migrating the warehouse: waiting for it to finish');
  let saidAt = waitedFrom;
  for (;;) {
    try {
      await sleep(TRY_AGAIN_MS, undefined, { signal });
    } catch (error) {
      throw new SyncError('INTERRUPTED', `stopped while waiting for another process's migration of ${location} to finish (${waitedMs()} ms waited)`, { cause: error });
    }
    if (await locked()) break;
    if (performance.now() - saidAt >= SAY_STILL_WAITING_MS) {
      saidAt = performance.now();
      logger?.info({ warehouse: location, waitedMs: waitedMs() }, 'another process is still migrating the warehouse: waiting for it to finish');
    }
  }
  logger?.info({ warehouse: location, waitedMs: waitedMs() }, 'took the migration lock');
}
