import { sql, type Kysely, type Migration, type RawBuilder } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/**
 * Lineage and analytics-ready tables, in place, losing nothing:
 *
 * - `report_loads.load_id` (a UUID: `uuid` in Postgres, text in SQLite) names the load that wrote
 *   the rows a slice holds, and `report_loads.loaded_at` says when; each report row carries the
 *   `load_id` of the load that wrote it. Slices whose rows the ledger describes (loaded, or failed
 *   after a load) get an id now, and their rows that id; `loaded_at` is filled in where the ledger
 *   knows it (`updated_at` of a `loaded` slice: nothing since has changed its rows).
 * - `extra` becomes `jsonb` in Postgres (SQLite keeps text holding JSON, for `json_extract`).
 * - Indexes: `load_id` unique in the ledger (a row's load in one lookup); the loaded slices of a
 *   portfolio and report type by date (its latest day in one lookup). One ISIN over time is
 *   `constituent_report_isin` (isin, report_date), there since 0001.
 * - Views: `latest_loaded_day` (per portfolio and report type, the latest day whose status is
 *   `loaded`, with its load and file), `latest_index_report` and `latest_constituent_report` (the
 *   rows of that day).
 *
 * Postgres runs every pending migration in one transaction; on SQLite this one brings its own (a
 * savepoint, nested in report-sync's migration transaction, see `migrateWarehouse`): a crash
 * leaves the warehouse as before, never half-migrated.
 * Columns are spelled out, never taken from the report definitions: a migration must create the
 * same thing whatever the code becomes.
 *
 * The column changes differ in kind between the dialects (Postgres alters a type in place; SQLite
 * adds columns in a savepoint): they are the dialect's own steps (`MigrationDialect.lineageAndAnalytics`),
 * which share the statements below.
 */
export function lineageAndAnalytics(dialect: MigrationDialect): Migration {
  return dialect.lineageAndAnalytics;
}

/** Each report row gets the `load_id` of its slice's ledger row (the same statements in both dialects). */
export async function fillRowsLoadId(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    sql`update index_report as report set load_id = ledger.load_id
        from report_loads as ledger
        where ledger.portfolio_id = report.portfolio_id and ledger.report_type = 'index' and ledger.report_date = report.report_date
          and ledger.load_id is not null`,
    sql`update constituent_report as report set load_id = ledger.load_id
        from report_loads as ledger
        where ledger.portfolio_id = report.portfolio_id and ledger.report_type = report.report_type and ledger.report_date = report.report_date
          and ledger.load_id is not null`,
  ])
    await statement.execute(db);
}

/** The indexes and views, the same text in SQLite and Postgres. */
export async function createIndexesAndViews(db: Kysely<unknown>): Promise<void> {
  const statements: RawBuilder<unknown>[] = [
    sql`create unique index report_loads_load_id on report_loads (load_id)`,
    // Partial: only loaded slices, the ones "latest loaded day" asks about; max(report_date) per
    // portfolio and report type is then the last entry of its range.
    sql`create index report_loads_loaded on report_loads (portfolio_id, report_type, report_date) where status = 'loaded'`,
  ];
  for (const statement of statements) await statement.execute(db);
  await createLatestViews(db);
}

/** The views of the latest loaded day, the same text in every dialect. */
export async function createLatestViews(db: Kysely<unknown>): Promise<void> {
  const statements: RawBuilder<unknown>[] = [
    sql`create view latest_loaded_day as
        select ledger.portfolio_id, ledger.report_type, ledger.report_date, ledger.row_count, ledger.load_id, ledger.loaded_at,
          ledger.format, ledger.file_name, ledger.bytes, ledger.content_sha256
        from report_loads as ledger
        join (
          select portfolio_id, report_type, max(report_date) as report_date
          from report_loads where status = 'loaded' group by portfolio_id, report_type
        ) as latest on latest.portfolio_id = ledger.portfolio_id and latest.report_type = ledger.report_type and latest.report_date = ledger.report_date`,
    sql`create view latest_index_report as
        select report.portfolio_id, report.report_date, report.line_number, report.effective_date, report.index_id, report.index_name,
          report.index_value, report.currency, report.close_market_value, report.open_market_value, report.close_divisor, report.open_divisor,
          report.extra, report.load_id
        from index_report as report
        join latest_loaded_day as latest
          on latest.portfolio_id = report.portfolio_id and latest.report_type = 'index' and latest.report_date = report.report_date`,
    sql`create view latest_constituent_report as
        select report.portfolio_id, report.report_type, report.report_date, report.line_number, report.effective_date, report.isin,
          report.security_name, report.security_ticker, report.exchange_code, report.closing_price, report.currency, report.closing_fx,
          report.index_shares, report.index_weighting, report.extra, report.load_id
        from constituent_report as report
        join latest_loaded_day as latest
          on latest.portfolio_id = report.portfolio_id and latest.report_type = report.report_type and latest.report_date = report.report_date`,
  ];
  for (const statement of statements) await statement.execute(db);
}

/** Drops what {@link createIndexesAndViews} made, the views first. */
export async function dropViewsAndIndexes(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    sql`drop view latest_constituent_report`,
    sql`drop view latest_index_report`,
    sql`drop view latest_loaded_day`,
    sql`drop index report_loads_loaded`,
    sql`drop index report_loads_load_id`,
  ])
    await statement.execute(db);
}
