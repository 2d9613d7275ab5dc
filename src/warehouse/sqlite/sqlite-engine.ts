import { sql, type RawBuilder } from 'kysely';
import { createIndexIfMissing } from '../engine/index-definition.js';
import type { LedgerPeriod } from '../engine/ledger-period.js';
import type { WarehouseEngine } from '../engine/warehouse-engine.js';
import { migrateHoldingSqliteLock } from './migrate-holding-sqlite-lock.js';
import { openSqlite } from './open-sqlite.js';
import { readSqliteIndexesAndViews, readSqliteTables } from './sqlite-catalogue.js';
import { SQLITE_MIGRATIONS } from './sqlite-migrations.js';
import { sqliteNow } from './sqlite-now.js';
import { SqliteRowWriter } from './sqlite-row-writer.js';
import { SQLITE_DECIMAL_COLUMN } from './sqlite-decimal-column.js';

/** The first day of a slice's period, as YYYY-MM-DD text (SQLite stores dates as that text). */
const PERIOD_START: Record<LedgerPeriod, RawBuilder<string>> = {
  day: sql<string>`report_date`,
  week: sql<string>`date(report_date, '-' || ((cast(strftime('%w', report_date) as integer) + 6) % 7) || ' days')`,
  month: sql<string>`substr(report_date, 1, 7) || '-01'`,
};

/**
 * SQLite: one file on one machine. One writer at a time, so slices' transactions take turns; a
 * transaction of slices that write few rows keeps its savepoint journal in memory (see
 * `SqliteSliceLock.begin`), so deleting a big slice's rows never happens in one: a slice holding
 * more than `smallMaxHeldRows` is handed back to a transaction that is not small. The bound keeps
 * the journal's pages in memory to a few MiB (a row of the report tables takes a few hundred bytes).
 */
export const sqliteEngine: WarehouseEngine<'sqlite'> = {
  dialect: 'sqlite',
  schemes: ['sqlite:'],
  example: 'sqlite:./data/warehouse.sqlite',
  open: async (databaseUrl, options) => openSqlite(databaseUrl, options),
  rowWriter: new SqliteRowWriter(),
  decimalColumn: SQLITE_DECIMAL_COLUMN,
  transactions: {
    parallel: 1,
    // A file held in memory and not compressed has few rows; a stream or a ZIP may have any number.
    small: (write) => write.rows === 'none' || (write.rows === 'file' && write.heldInMemory && !write.compressed),
    smallMaxHeldRows: 10_000,
    savepointReplacesItsName: false,
  },
  now: sqliteNow,
  periodStart: (period) => PERIOD_START[period],
  readTables: readSqliteTables,
  readIndexesAndViews: readSqliteIndexesAndViews,
  createIndex: (index) => createIndexIfMissing(index, { partial: true }),
  createView: (name, query) => sql`create view if not exists ${sql.id(name)} as ${query}`,
  migrations: SQLITE_MIGRATIONS,
  migrate: migrateHoldingSqliteLock,
  // A view over a table or column dropped by hand makes SQLite's catalogue unreadable to Kysely.
  isDroppedUnderView: (error) => /no such (table|column)/i.test(error instanceof Error ? error.message : String(error)),
  unreachableAdvice: '',
};
