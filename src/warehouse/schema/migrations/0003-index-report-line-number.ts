import { sql, type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import type { WarehouseDialect } from '../../open-warehouse.js';

/**
 * `index_report` gets `line_number` (the record's 1-based position in its file, as
 * `constituent_report` has) and a primary key on (portfolio_id, report_date, line_number), so that
 * a slice loaded twice over can never hold its rows twice: the database refuses it, whatever the
 * loader does. Existing rows are numbered in the order they were stored, which is their file's.
 *
 * A warehouse that already holds a slice twice (two processes loaded it at once before the
 * per-slice lock) keeps both copies, numbered on: its table count then differs from the ledger's
 * `row_count`, which `check --deep` lists and the next sync of the slice repairs by loading it again.
 */
export function indexReportLineNumber(dialect: WarehouseDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (dialect === 'postgres') {
        await sql`alter table index_report add column line_number integer`.execute(db);
        await sql`
          update index_report as target set line_number = numbered.line_number
          from (
            select ctid, row_number() over (partition by portfolio_id, report_date order by ctid) as line_number
            from index_report
          ) as numbered
          where target.ctid = numbered.ctid`.execute(db);
        await sql`alter table index_report alter column line_number set not null`.execute(db);
        await sql`alter table index_report add constraint index_report_pk primary key (portfolio_id, report_date, line_number)`.execute(db);
        // The primary key starts with the slice's columns: the old slice index is now redundant.
        await sql`drop index if exists index_report_slice`.execute(db);
        return;
      }
      // SQLite cannot add a primary key to a table: build the new one beside it and swap.
      await rebuildSqliteTable(db, true);
    },
    async down(db: Kysely<unknown>) {
      if (dialect === 'postgres') {
        await sql`alter table index_report drop constraint index_report_pk`.execute(db);
        await sql`alter table index_report drop column line_number`.execute(db);
        await sql`create index if not exists index_report_slice on index_report (portfolio_id, report_date)`.execute(db);
        return;
      }
      await rebuildSqliteTable(db, false);
      await sql`create index index_report_slice on index_report (portfolio_id, report_date)`.execute(db);
    },
  };
}

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
