import { sql, type CreateTableBuilder, type Kysely, type Migration, type RawBuilder } from 'kysely';
import { createIndexesAndViews, dropViewsAndIndexes, fillRowsLoadId } from '../schema/migrations/0005-lineage-and-analytics.js';
import type { MigrationDialect } from '../engine/migration-dialect.js';

/** SQLite's steps of 0003-index-report-line-number (see `indexReportLineNumber`): the table rebuilt. */
export const sqliteIndexReportLineNumber: Migration = {
  async up(db: Kysely<unknown>) {
    // SQLite cannot add a primary key to a table: build the new one beside it and swap.
    await rebuildSqliteTable(db, true);
  },
  async down(db: Kysely<unknown>) {
    await rebuildSqliteTable(db, false);
    await sql`create index index_report_slice on index_report (portfolio_id, report_date)`.execute(db);
  },
};

/** Swaps SQLite's `index_report` for one with (or without) `line_number` and its primary key, keeping the rows in order. */
async function rebuildSqliteTable(db: Kysely<unknown>, withLineNumber: boolean): Promise<void> {
  let table: CreateTableBuilder<'index_report_new', string> = db.schema
    .createTable('index_report_new')
    .addColumn('portfolio_id', 'integer', (c) => c.notNull())
    .addColumn('report_date', 'date', (c) => c.notNull());
  if (withLineNumber) table = table.addColumn('line_number', 'integer', (c) => c.notNull());
  table = table
    .addColumn('effective_date', 'date', (c) => c.notNull())
    .addColumn('index_id', 'text', (c) => c.notNull())
    .addColumn('index_name', 'text')
    .addColumn('index_value', 'numeric')
    .addColumn('currency', 'text')
    .addColumn('close_market_value', 'numeric')
    .addColumn('open_market_value', 'numeric')
    .addColumn('close_divisor', 'numeric')
    .addColumn('open_divisor', 'numeric')
    .addColumn('extra', 'text');
  if (withLineNumber) table = table.addPrimaryKeyConstraint('index_report_pk', ['portfolio_id', 'report_date', 'line_number']);
  await table.execute();
  // The columns spelled out: constant SQL text, the rows copied in the order they were stored.
  await (
    withLineNumber
      ? sql`insert into index_report_new (portfolio_id, report_date, line_number, effective_date, index_id, index_name, index_value,
            currency, close_market_value, open_market_value, close_divisor, open_divisor, extra)
          select portfolio_id, report_date, row_number() over (partition by portfolio_id, report_date order by rowid), effective_date,
            index_id, index_name, index_value, currency, close_market_value, open_market_value, close_divisor, open_divisor, extra
          from index_report`
      : sql`insert into index_report_new (portfolio_id, report_date, effective_date, index_id, index_name, index_value, currency,
            close_market_value, open_market_value, close_divisor, open_divisor, extra)
          select portfolio_id, report_date, effective_date, index_id, index_name, index_value, currency, close_market_value,
            open_market_value, close_divisor, open_divisor, extra
          from index_report order by portfolio_id, report_date, line_number`
  ).execute(db);
  await db.schema.dropTable('index_report').execute();
  await db.schema.alterTable('index_report_new').renameTo('index_report').execute();
}

/** SQLite's steps of 0005-lineage-and-analytics (see `lineageAndAnalytics`), each all or nothing. */
export const sqliteLineageAndAnalytics: Migration = {
  async up(db: Kysely<unknown>) {
    await inSqliteTransaction(db, () => upSqlite(db));
  },
  async down(db: Kysely<unknown>) {
    await inSqliteTransaction(db, async () => {
      await dropViewsAndIndexes(db);
      for (const statement of [
        sql`alter table index_report drop column load_id`,
        sql`alter table constituent_report drop column load_id`,
        sql`alter table report_loads drop column load_id`,
        sql`alter table report_loads drop column loaded_at`,
      ])
        await statement.execute(db);
    });
  },
};

async function upSqlite(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    sql`alter table report_loads add column load_id text`,
    sql`alter table report_loads add column loaded_at text`,
    // A version 4 UUID in the form Postgres and crypto.randomUUID() write: 8-4-4-4-12 lower-case hex.
    sql`update report_loads set
          load_id = lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-'
            || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))),
          loaded_at = case when status = 'loaded' then updated_at end
        where status = 'loaded' or content_sha256 is not null`,
    sql`alter table index_report add column load_id text`,
    sql`alter table constituent_report add column load_id text`,
  ])
    await statement.execute(db);
  await fillRowsLoadId(db);
  await createIndexesAndViews(db);
}

/**
 * Runs `work` all or nothing on SQLite's one connection. A savepoint, not BEGIN: report-sync runs
 * every pending migration in one transaction of its own (its cross-process migration lock), where
 * a BEGIN would fail; run alone (Kysely's migrator begins none on SQLite), a savepoint begins and
 * commits a transaction itself. What the migration makes is unchanged.
 */
async function inSqliteTransaction(db: Kysely<unknown>, work: () => Promise<void>): Promise<void> {
  // The savepoint's name is 0005's, where it began; it names no more than a savepoint.
  await sql`savepoint migration_0005`.execute(db);
  try {
    await work();
    await sql`release migration_0005`.execute(db);
  } catch (error) {
    await sql`rollback to migration_0005`.execute(db).catch(() => undefined);
    await sql`release migration_0005`.execute(db).catch(() => undefined);
    throw error;
  }
}

/** A ledger row's month, as `report_loads_monthly.month` holds it (`old` or `new` in a trigger). */
const sqliteMonthOf = (row: 'old' | 'new') => `substr(${row}.report_date, 1, 7) || '-01'`;

/** Counts one ledger row out of its month (`old`), dropping a count that reaches nought. */
const sqliteCountOut = `
  update report_loads_monthly set slices = slices - 1
    where month = ${sqliteMonthOf('old')} and portfolio_id = old.portfolio_id and report_type = old.report_type and status = old.status;
  delete from report_loads_monthly
    where month = ${sqliteMonthOf('old')} and portfolio_id = old.portfolio_id and report_type = old.report_type and status = old.status and slices <= 0;`;

/** Counts one ledger row into its month (`new`). */
const sqliteCountIn = `
  insert into report_loads_monthly (month, portfolio_id, report_type, status, slices)
    values (${sqliteMonthOf('new')}, new.portfolio_id, new.report_type, new.status, 1)
    on conflict (month, portfolio_id, report_type, status) do update set slices = slices + 1;`;

/**
 * SQLite's steps of 0007-ledger-rollup (see `ledgerRollup`): one writer at a time, so each row
 * trigger counts its slice in place. An update that changes neither the status nor the slice's
 * month (a re-check: `checked_at`, `attempts`) fires nothing.
 */
export const sqliteLedgerRollup: Migration = {
  async up(db: Kysely<unknown>) {
    await inSqliteTransaction(db, () =>
      runAll(db, [
        sql`create table report_loads_monthly (
            month date not null, portfolio_id integer not null, report_type text not null, status text not null, slices integer not null,
            constraint report_loads_monthly_pk primary key (month, portfolio_id, report_type, status)
          ) without rowid`,
        sql`insert into report_loads_monthly (month, portfolio_id, report_type, status, slices)
          select substr(report_date, 1, 7) || '-01', portfolio_id, report_type, status, count(*) from report_loads group by 1, 2, 3, 4`,
        // The failed slices of a range (status, check, the dashboard's failures): a few index rows, not every ledger row of the range.
        sql`create index report_loads_failed on report_loads (report_date, portfolio_id, report_type) where status = 'failed'`,
        sql.raw(`create trigger report_loads_monthly_insert after insert on report_loads begin ${sqliteCountIn} end`),
        sql.raw(`create trigger report_loads_monthly_update after update of portfolio_id, report_type, report_date, status on report_loads
          when old.status is not new.status or old.portfolio_id is not new.portfolio_id or old.report_type is not new.report_type
            or ${sqliteMonthOf('old')} is not ${sqliteMonthOf('new')}
          begin ${sqliteCountOut} ${sqliteCountIn} end`),
        sql.raw(`create trigger report_loads_monthly_delete after delete on report_loads begin ${sqliteCountOut} end`),
      ]),
    );
  },
  async down(db: Kysely<unknown>) {
    await inSqliteTransaction(db, () =>
      runAll(db, [
        sql`drop trigger report_loads_monthly_insert`,
        sql`drop trigger report_loads_monthly_update`,
        sql`drop trigger report_loads_monthly_delete`,
        sql`drop table report_loads_monthly`,
        sql`drop index report_loads_failed`,
      ]),
    );
  },
};

async function runAll(db: Kysely<unknown>, statements: readonly RawBuilder<unknown>[]): Promise<void> {
  for (const statement of statements) await statement.execute(db);
}

/** What the migrations need of SQLite: times as ISO 8601 text, and its own steps of 0003 and 0005. */
export const SQLITE_MIGRATIONS: MigrationDialect = {
  timestampType: 'text',
  realType: 'real',
  indexReportLineNumber: sqliteIndexReportLineNumber,
  lineageAndAnalytics: sqliteLineageAndAnalytics,
  ledgerRollup: sqliteLedgerRollup,
};
