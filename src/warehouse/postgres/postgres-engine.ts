import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import { createIndexIfMissing } from '../engine/index-definition.js';
import type { LedgerPeriod } from '../engine/ledger-period.js';
import type { WarehouseEngine } from '../engine/warehouse-engine.js';
import { migrateHoldingPostgresLock } from './migrate-holding-postgres-lock.js';
import { readPostgresIndexesAndViews, readPostgresTables } from './postgres-catalogue.js';
import { POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import { PostgresRowWriter } from './postgres-row-writer.js';
import { POSTGRES_DECIMAL_COLUMN } from './postgres-decimal-column.js';

const NOW = CompiledQuery.raw('select now() as now');

/** The first day of a slice's period, as YYYY-MM-DD text (`report_date` is a DATE). */
const PERIOD_START: Record<LedgerPeriod, RawBuilder<string>> = {
  day: sql<string>`to_char(report_date, 'YYYY-MM-DD')`,
  week: sql<string>`to_char(date_trunc('week', report_date), 'YYYY-MM-DD')`,
  month: sql<string>`to_char(date_trunc('month', report_date), 'YYYY-MM-DD')`,
};

/**
 * Postgres: a server many machines share. Slices are locked one by one (advisory locks), so two
 * transactions write at once: one writes while the other waits on the server. It has no small
 * transactions: every transaction is the same kind.
 */
export const postgresEngine: WarehouseEngine<'postgres'> = {
  dialect: 'postgres',
  schemes: ['postgres://', 'postgresql://'],
  example: 'postgres://user@host:5432/database',
  // The driver is loaded when a warehouse of this dialect is opened, not by every command's start.
  open: async (databaseUrl, options) => (await import('./open-postgres.js')).openPostgres(databaseUrl, options),
  rowWriter: new PostgresRowWriter(),
  decimalColumn: POSTGRES_DECIMAL_COLUMN,
  transactions: { parallel: 2, small: () => false, smallMaxHeldRows: 0, savepointReplacesItsName: false },
  // The server's clock, at the start of the transaction.
  now: async (db) => {
    const { rows } = await db.executeQuery<{ now: Date | string }>(NOW);
    return new Date(rows[0]!.now).toISOString();
  },
  periodStart: (period) => PERIOD_START[period],
  readTables: readPostgresTables,
  readIndexesAndViews: readPostgresIndexesAndViews,
  // Postgres has no `create view if not exists`; `or replace` with the same query changes nothing.
  createIndex: (index) => createIndexIfMissing(index, { partial: true }),
  createView: (name, query) => sql`create or replace view ${sql.id(name)} as ${query}`,
  migrations: POSTGRES_MIGRATIONS,
  migrate: migrateHoldingPostgresLock,
  isDroppedUnderView: () => false,
  unreachableAdvice: '; check DATABASE_URL and that the database server is running',
};
