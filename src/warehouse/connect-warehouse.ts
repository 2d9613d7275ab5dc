import type { AppConfig } from '../config/load-config.js';
import { SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { missingAnalyticsObjects, restoreAnalyticsObjects } from './schema/analytics-objects.js';
import { classifyWarehouseError } from './engine/classify-warehouse-error.js';
import { migrateWarehouse } from './schema/migrate-warehouse.js';
import { MissingWarehouseError } from './engine/missing-warehouse-error.js';
import { openWarehouse } from './open-warehouse.js';
import type { WarehouseHandle } from './engine/warehouse-engine.js';
import { verifyWarehouseSchema } from './schema/verify-warehouse-schema.js';
import { waitForWarehouse } from './wait-for-warehouse.js';

export interface ConnectWarehouseOptions {
  /**
   * `write`: create the warehouse if needed and bring its schema up to date (syncs, `migrate`);
   * `read`: the warehouse must already exist with its tables, and nothing is created or migrated
   * (`status`, `check`), so a mistyped path is reported, never silently made into an empty warehouse.
   * Either way the schema is checked, not assumed (see {@link verifyWarehouseSchema}): `write` stops
   * on damage (exit 2), `read` reports it in `damage` and reads on.
   */
  readonly purpose: 'write' | 'read';
  /**
   * `write` only: also re-create the indexes and views the warehouse lacks (`migrate`; see
   * {@link restoreAnalyticsObjects}). A `read` warns of them in `damage`.
   */
  readonly restoreAnalyticsObjects?: boolean;
  /**
   * A shutdown: a wait for the database server to accept connections, or for another process's
   * migration, ends at once with `INTERRUPTED`.
   */
  readonly signal?: AbortSignal;
  /** Where those waits are said. */
  readonly logger?: Logger;
}

/**
 * Opens the warehouse named by `DATABASE_URL` and makes sure it answers: a server that refuses
 * connections (starting up, restarting) is waited for up to `startup.timeoutMs`, then
 * `SERVICE_UNREACHABLE` (exit 2, naming DATABASE_URL; see {@link waitForWarehouse}); a database that
 * does not exist or refuses the account is `CONFIG_INVALID` at once. On
 * failure nothing is left open. `applied`: the migrations this call applied; `restored`: the
 * indexes and views it re-created; `lacking` (`write` only): the indexes and views still missing,
 * for a sync to warn of; `rowPath` (`write` only): how slices' rows will be written (see
 * `RowWriter.describe`), for a sync to say once; `damage` (`read` only): one message per problem
 * of the schema or of `kysely_migration`, for the command to warn of.
 */
export async function connectWarehouse(
  config: AppConfig,
  options: ConnectWarehouseOptions,
): Promise<
  WarehouseHandle & {
    readonly applied: readonly string[];
    readonly restored: readonly string[];
    readonly lacking: readonly string[];
    readonly damage: readonly string[];
    readonly rowPath?: string;
  }
> {
  const { settings } = config;
  const warehouse = await openWarehouse(config.databaseUrl, {
    cwd: config.cwd,
    busyTimeoutMs: settings.warehouse.busyTimeoutMs,
    poolSize: settings.warehouse.poolSize,
    sqliteFileMode: Number.parseInt(settings.warehouse.sqliteFileMode, 8),
    connectTimeoutMs: settings.startup.timeoutMs,
    mustExist: options.purpose === 'read',
    checkpointOnThread: options.purpose === 'write',
  });
  try {
    await waitForWarehouse(warehouse, { timeoutMs: settings.startup.timeoutMs, signal: options.signal, logger: options.logger, writes: options.purpose === 'write' });
    if (options.purpose === 'read') {
      await verifyTables(warehouse);
      return { ...warehouse, applied: [], restored: [], lacking: [], damage: await damageOf(warehouse) };
    }
    const { applied } = await migrateWarehouse(warehouse, { signal: options.signal, logger: options.logger });
    // A table or column dropped by hand is not something migrate notices (its row in
    // kysely_migration is still there): every slice would download its file only to fail it.
    const damage = await verifyWarehouseSchema(warehouse);
    if (damage) throw damage;
    const restored = options.restoreAnalyticsObjects ? await restoreAnalyticsObjects(warehouse) : [];
    const lacking = options.restoreAnalyticsObjects ? [] : await missingAnalyticsObjects(warehouse);
    const rowPath = await warehouse.engine.rowWriter.describe(warehouse.db);
    return { ...warehouse, applied, restored, lacking, damage: [], rowPath };
  } catch (error) {
    await warehouse.close().catch(() => undefined);
    throw atStart(error, warehouse);
  }
}

/** A read-only command's check that the ledger is there: one cheap query, nothing created. */
async function verifyTables(warehouse: WarehouseHandle): Promise<void> {
  try {
    await warehouse.db.selectFrom('report_loads').select('status').limit(1).execute();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // SQLite: "no such table"; Postgres: 42P01 undefined_table; MySQL: ER_NO_SUCH_TABLE ("doesn't exist").
    if (/no such table|does not exist|doesn't exist/i.test(message) && (error as { code?: unknown }).code !== '3D000') {
      throw new MissingWarehouseError(warehouse.location, `${warehouse.location} has no report-sync tables: check DATABASE_URL, or create them with report-sync migrate`);
    }
    throw classifyWarehouseError(error, `reading ${warehouse.location}`);
  }
}

/**
 * What a read-only command warns of, one message each: a damaged migration history, tables or
 * columns missing. Never a reason to stop: the ledger may still be readable.
 */
async function damageOf(warehouse: WarehouseHandle): Promise<string[]> {
  const damage: string[] = [];
  let pending: readonly string[] = [];
  try {
    pending = (await migrateWarehouse(warehouse, { dryRun: true })).pending;
  } catch (error) {
    damage.push(classifyWarehouseError(error, `reading the migration history of ${warehouse.location}`).message);
  }
  // A warehouse the next sync will migrate lacks the newer columns by design, not by damage.
  if (pending.length > 0) return damage;
  try {
    const schema = await verifyWarehouseSchema(warehouse);
    if (schema) damage.push(schema.message);
    const missing = schema ? [] : await missingAnalyticsObjects(warehouse);
    if (missing.length > 0) {
      damage.push(
        `the warehouse at ${warehouse.location} lacks ${missing.join(', ')}: nothing is lost (they hold no data of their own), but queries of a missing view fail ` +
          `and a missing index makes them slow; run report-sync migrate to re-create ${missing.length === 1 ? 'it' : 'them'}`,
      );
    }
  } catch (error) {
    damage.push(classifyWarehouseError(error, `checking the schema of ${warehouse.location}`).message);
  }
  return damage;
}

/**
 * Trouble after the server answered (it went away again, or SQLite's write lock was held past
 * warehouse.busyTimeoutMs) still stops a command at start with exit 2, in its own words.
 */
function atStart(error: unknown, warehouse: WarehouseHandle): SyncError {
  const classified = classifyWarehouseError(error, `connecting to ${warehouse.location}`);
  if (classified.code !== 'WAREHOUSE_UNAVAILABLE') return classified;
  const advice = warehouse.engine.unreachableAdvice;
  return new SyncError('SERVICE_UNREACHABLE', `${classified.message}${advice}`, { cause: classified });
}
