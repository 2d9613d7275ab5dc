import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import { createIndexIfMissing } from '../engine/index-definition.js';
import type { LedgerPeriod } from '../engine/ledger-period.js';
import type { WarehouseEngine } from '../engine/warehouse-engine.js';
import { migrateHoldingMysqlLock } from './migrate-holding-mysql-lock.js';
import { readMysqlIndexesAndViews, readMysqlTables } from './mysql-catalogue.js';
import { MYSQL_MIGRATIONS } from './mysql-migrations.js';
import { MysqlRowWriter } from './mysql-row-writer.js';
import { mysqlTimestamp } from './mysql-timestamp.js';
import { MYSQL_DECIMAL_COLUMN } from './mysql-decimal-column.js';

const NOW = CompiledQuery.raw('select utc_timestamp(3) as now');

/** The first day of a slice's period, as YYYY-MM-DD text (`report_date` is a DATE). */
const PERIOD_START: Record<LedgerPeriod, RawBuilder<string>> = {
  day: sql<string>`date_format(report_date, '%Y-%m-%d')`,
  week: sql<string>`date_format(report_date - interval weekday(report_date) day, '%Y-%m-%d')`,
  month: sql<string>`date_format(report_date, '%Y-%m-01')`,
};

/**
 * MySQL and MariaDB: a server many machines share, as Postgres is. Slices are locked one by one
 * (named locks), so two transactions write at once; no small transactions.
 */
export const mysqlEngine: WarehouseEngine<'mysql'> = {
  dialect: 'mysql',
  schemes: ['mysql://', 'mariadb://'],
  example: 'mysql://user@host:3306/database',
  // The driver is loaded when a warehouse of this dialect is opened, not by every command's start.
  open: async (databaseUrl, options) => (await import('./open-mysql.js')).openMysql(databaseUrl, options),
  rowWriter: new MysqlRowWriter(),
  decimalColumn: MYSQL_DECIMAL_COLUMN,
  transactions: { parallel: 2, small: () => false, smallMaxHeldRows: 0, savepointReplacesItsName: true },
  now: async (db) => {
    const { rows } = await db.executeQuery<{ now: string }>(NOW);
    return mysqlTimestamp(rows[0]!.now);
  },
  periodStart: (period) => PERIOD_START[period],
  readTables: readMysqlTables,
  readIndexesAndViews: readMysqlIndexesAndViews,
  createIndex: (index) => createIndexIfMissing(index, { partial: false }),
  // `or replace` with the same query changes nothing (MySQL has no `create view if not exists`).
  createView: (name, query) => sql`create or replace view ${sql.id(name)} as ${query}`,
  migrations: MYSQL_MIGRATIONS,
  migrate: migrateHoldingMysqlLock,
  isDroppedUnderView: () => false,
  unreachableAdvice: '; check DATABASE_URL and that the database server is running',
};
