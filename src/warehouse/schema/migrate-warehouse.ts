import type { Migration, MigrationProvider, MigrationResultSet } from 'kysely';
import { ConfigError } from '../../errors/sync-error.js';
import type { Logger } from '../../logging/logger.js';
import { classifyWarehouseError } from '../engine/classify-warehouse-error.js';
import { createTables } from './migrations/0001-create-tables.js';
import { ledgerErrorCode } from './migrations/0002-ledger-error-code.js';
import { indexReportLineNumber } from './migrations/0003-index-report-line-number.js';
import { ledgerDuration } from './migrations/0004-ledger-duration.js';
import { lineageAndAnalytics } from './migrations/0005-lineage-and-analytics.js';
import { sliceChecks } from './migrations/0006-slice-checks.js';
import { ledgerRollup } from './migrations/0007-ledger-rollup.js';
import { monthlyCountsByPair } from './migrations/0008-monthly-counts-by-pair.js';
import { monthlyTotals } from './migrations/0009-monthly-totals.js';
import type { WarehouseHandle } from '../engine/warehouse-engine.js';
import type { MigrationDialect } from '../engine/migration-dialect.js';
import { readMigrationHistory } from './read-migration-history.js';
import { verifyWarehouseSchema } from './verify-warehouse-schema.js';

/**
 * The migrations, in order. Listed here rather than read from a folder so they work the same
 * from TypeScript sources, a bundle or a Docker image. Never edit a migration that has shipped:
 * add the next one.
 */
export function migrationsFor(dialect: MigrationDialect): Record<string, Migration> {
  return {
    '0001-create-tables': createTables(dialect),
    '0002-ledger-error-code': ledgerErrorCode(),
    '0003-index-report-line-number': indexReportLineNumber(dialect),
    '0004-ledger-duration': ledgerDuration(),
    '0005-lineage-and-analytics': lineageAndAnalytics(dialect),
    '0006-slice-checks': sliceChecks(dialect),
    '0007-ledger-rollup': ledgerRollup(dialect),
    '0008-monthly-counts-by-pair': monthlyCountsByPair(dialect),
    '0009-monthly-totals': monthlyTotals(dialect),
  };
}

/** Postgres SQLSTATEs (and MySQL's error names) of a migration creating what is already there: duplicate table, column, object. */
const ALREADY_THERE_CODES: ReadonlySet<string> = new Set(['42P07', '42701', '42710', 'ER_TABLE_EXISTS_ERROR', 'ER_DUP_FIELDNAME', 'ER_DUP_KEYNAME']);

export interface MigrateWarehouseOptions {
  /**
   * Change nothing: say which migrations are `pending`, and throw as a migration would when
   * `kysely_migration` is damaged (for the read-only commands).
   */
  readonly dryRun?: boolean;
  /** A shutdown: a wait for another process's migration ends at once with `INTERRUPTED`. */
  readonly signal?: AbortSignal;
  /** Where a wait for another process's migration is said. */
  readonly logger?: Logger;
}

/**
 * Brings the warehouse schema up to date; safe to run any number of times, from any number of
 * processes at once: one migrates while the others wait for it (Postgres: an advisory transaction lock;
 * SQLite: the database's write lock; see `WarehouseEngine.migrate`), then find nothing to do.
 */
export async function migrateWarehouse(warehouse: WarehouseHandle, options: MigrateWarehouseOptions = {}): Promise<{ applied: string[]; pending: string[] }> {
  const migrations = migrationsFor(warehouse.engine.migrations);
  const names = Object.keys(migrations);
  if (options.dryRun) {
    const history = await readMigrationHistory(warehouse, names);
    if (history.damage) throw history.damage;
    return { applied: [], pending: [...history.pending] };
  }
  // Nothing pending (every start but the first after an upgrade): no lock to wait for behind
  // another process's long write. A damaged or unreadable history goes the migrator's way, which
  // explains it.
  const history = await readMigrationHistory(warehouse, names).catch(() => undefined);
  if (history !== undefined && history.damage === undefined && history.pending.length === 0) return { applied: [], pending: [] };

  const provider: MigrationProvider = { getMigrations: async () => migrations };
  const result: MigrationResultSet = await warehouse.engine.migrate(warehouse, provider, options);
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    const explained = await explainHistory(warehouse, names, result.error, failed);
    if (explained) throw explained;
    // Kysely hands back whatever the driver threw: a server that is down or a database that does
    // not exist is not a migration that failed, and is said as what it is.
    throw classifyWarehouseError(result.error, failed ? `applying migration ${failed} to ${warehouse.location}` : `migrating ${warehouse.location}`);
  }
  return { applied: (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName), pending: [] };
}

/**
 * Kysely refuses a `kysely_migration` that does not match the migrations ("corrupted migrations:
 * …") without naming the rows to fix, and a migration that finds its table or column already
 * there usually means its row was deleted: both are said in terms of the rows, as bad
 * configuration (exit 2); so is a SQLite table or column a view reads that was dropped by hand.
 * Anything else (or a history that cannot be read) is left to the caller.
 */
async function explainHistory(warehouse: WarehouseHandle, known: readonly string[], error: unknown, failed: string | undefined): Promise<ConfigError | undefined> {
  const message = error instanceof Error ? error.message : String(error);
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  const corrupted = message.startsWith('corrupted migrations');
  const alreadyThere = failed !== undefined && (ALREADY_THERE_CODES.has(code) || /already exists|duplicate column/i.test(message));
  // A view (0005's) over a table or column dropped by hand can make the catalogue unreadable to
  // Kysely (SQLite), whose migrator reads it first: the damage is said as the schema check says it.
  if (warehouse.engine.isDroppedUnderView(error)) return verifyWarehouseSchema(warehouse).catch(() => undefined);
  if (!corrupted && !alreadyThere) return undefined;
  const history = await readMigrationHistory(warehouse, known).catch(() => undefined);
  if (history?.damage) return new ConfigError(history.damage.message, { cause: error });
  if (!alreadyThere) return undefined;
  const listed = history && history.recorded.length > 0 ? `it lists ${history.recorded.join(', ')}` : 'it lists none';
  return new ConfigError(
    `applying migration ${failed} to ${warehouse.location} failed: ${message}. The warehouse seems to have had it already, though kysely_migration does not record it (${listed}). ` +
      `If its tables are intact, record it (insert into kysely_migration (name, timestamp) values ('${failed}', '${new Date().toISOString()}')) and run report-sync migrate again; otherwise restore the warehouse from a backup`,
    { cause: error },
  );
}
