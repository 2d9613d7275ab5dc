import { sql, type Kysely, type Migration } from 'kysely';
import { createIndexesAndViews, dropViewsAndIndexes, fillRowsLoadId } from '../schema/migrations/0005-lineage-and-analytics.js';
import type { MigrationDialect } from '../engine/migration-dialect.js';

/** Postgres's steps of 0003-index-report-line-number (see `indexReportLineNumber`): altered in place. */
export const postgresIndexReportLineNumber: Migration = {
  async up(db: Kysely<unknown>) {
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
  },
  async down(db: Kysely<unknown>) {
    await sql`alter table index_report drop constraint index_report_pk`.execute(db);
    await sql`alter table index_report drop column line_number`.execute(db);
    await sql`create index if not exists index_report_slice on index_report (portfolio_id, report_date)`.execute(db);
  },
};

/** Postgres's steps of 0005-lineage-and-analytics (see `lineageAndAnalytics`). */
export const postgresLineageAndAnalytics: Migration = {
  up: upPostgres,
  async down(db: Kysely<unknown>) {
    await dropViewsAndIndexes(db);
    await sql`alter table index_report alter column extra type text using extra::text, drop column load_id`.execute(db);
    await sql`alter table constituent_report alter column extra type text using extra::text, drop column load_id`.execute(db);
    await sql`alter table report_loads drop column load_id, drop column loaded_at`.execute(db);
  },
};

async function upPostgres(db: Kysely<unknown>): Promise<void> {
  await sql`alter table report_loads add column load_id uuid, add column loaded_at timestamptz`.execute(db);
  await sql`
    update report_loads set load_id = gen_random_uuid(), loaded_at = case when status = 'loaded' then updated_at end
    where status = 'loaded' or content_sha256 is not null`.execute(db);
  await sql`alter table index_report add column load_id uuid`.execute(db);
  await sql`alter table constituent_report add column load_id uuid`.execute(db);
  await fillRowsLoadId(db);
  // The type change rewrites each table, after the UPDATE above: the rewrite keeps only the live
  // rows, so the tables end no bigger than they began.
  //
  // jsonb refuses two things a text column took: \u0000 in a string, and a lone UTF-16 surrogate
  // (\ud800); and a number beyond NUMERIC's range (1e999999). Such an `extra` is kept whole as a
  // JSON string of its text (`extra #>> '{}'` gives it back). Only values that may hold one go
  // through the checking function, whose exception block costs a subtransaction each.
  await sql`
    create function pg_temp.report_sync_jsonb(value text) returns jsonb language plpgsql immutable as $$
    begin
      return value::jsonb;
    exception when others then
      return to_jsonb(value);
    end $$`.execute(db);
  for (const statement of [
    sql`alter table index_report alter column extra type jsonb using
          case when extra ~* '\\\\u(0000|d[89a-f])|e[+-]?[0-9]{4}' then pg_temp.report_sync_jsonb(extra) else extra::jsonb end`,
    sql`alter table constituent_report alter column extra type jsonb using
          case when extra ~* '\\\\u(0000|d[89a-f])|e[+-]?[0-9]{4}' then pg_temp.report_sync_jsonb(extra) else extra::jsonb end`,
  ])
    await statement.execute(db);
  await sql`drop function pg_temp.report_sync_jsonb(text)`.execute(db);
  await createIndexesAndViews(db);
}

/** What the migrations need of Postgres: its own types, and its steps of 0003 and 0005. */
export const POSTGRES_MIGRATIONS: MigrationDialect = {
  timestampType: 'timestamptz',
  realType: 'double precision',
  indexReportLineNumber: postgresIndexReportLineNumber,
  lineageAndAnalytics: postgresLineageAndAnalytics,
};
