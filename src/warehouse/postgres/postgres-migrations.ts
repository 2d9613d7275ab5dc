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

/**
 * Postgres's steps of 0007-ledger-rollup (see `ledgerRollup`). Many processes write slices at once,
 * in transactions of many slices each: counting in place would make each wait for the others'
 * COMMIT on a shared count, and two that reach two counts in opposite orders would deadlock. So the
 * triggers only append each change as a row of its own (`pending`), which waits for no one, and
 * now and then (one write in 64) fold every appended row they see into one row per key, if they
 * can take the fold's advisory lock without waiting: only its holder deletes, so folds never wait
 * on each other either. Readers sum `slices` per key: the same answer folded or not.
 *
 * Inserts and deletes are counted per statement (a bulk insert is one grouped append); updates
 * per row, and only those that change a status or move a slice: a re-check fires nothing.
 */
export const postgresLedgerRollup: Migration = {
  async up(db: Kysely<unknown>) {
    for (const statement of [
      sql`create table report_loads_monthly (
            month date not null, portfolio_id integer not null, report_type text not null, status text not null,
            slices bigint not null, pending boolean not null default true
          )`,
      sql`create index report_loads_monthly_key on report_loads_monthly (month, portfolio_id, report_type, status) include (slices)`,
      sql`create index report_loads_monthly_pending on report_loads_monthly (month, portfolio_id, report_type) where pending`,
      sql`insert into report_loads_monthly (month, portfolio_id, report_type, status, slices, pending)
          select date_trunc('month', report_date)::date, portfolio_id, report_type, status, count(*), false from report_loads group by 1, 2, 3, 4`,
      sql`
        create function report_loads_monthly_fold() returns void language plpgsql as $$
        begin
          if pg_try_advisory_xact_lock(hashtextextended('report-sync:report_loads_monthly:fold', 0)) then
            with folded_keys as (
              select distinct month, portfolio_id, report_type from report_loads_monthly where pending
            ), gone as (
              delete from report_loads_monthly as counted using folded_keys as k
              where counted.month = k.month and counted.portfolio_id = k.portfolio_id and counted.report_type = k.report_type
              returning counted.month, counted.portfolio_id, counted.report_type, counted.status, counted.slices
            )
            insert into report_loads_monthly (month, portfolio_id, report_type, status, slices, pending)
            select month, portfolio_id, report_type, status, sum(slices), false from gone group by 1, 2, 3, 4 having sum(slices) <> 0;
          end if;
        end $$`,
      sql`
        create function report_loads_monthly_count_rows() returns trigger language plpgsql as $$
        begin
          if tg_op = 'INSERT' then
            insert into report_loads_monthly (month, portfolio_id, report_type, status, slices)
            select date_trunc('month', report_date)::date, portfolio_id, report_type, status, count(*) from new_rows group by 1, 2, 3, 4;
          else
            insert into report_loads_monthly (month, portfolio_id, report_type, status, slices)
            select date_trunc('month', report_date)::date, portfolio_id, report_type, status, -count(*) from old_rows group by 1, 2, 3, 4;
          end if;
          if random() < 1.0 / 64 then
            perform report_loads_monthly_fold();
          end if;
          return null;
        end $$`,
      sql`
        create function report_loads_monthly_count_change() returns trigger language plpgsql as $$
        begin
          insert into report_loads_monthly (month, portfolio_id, report_type, status, slices) values
            (date_trunc('month', old.report_date)::date, old.portfolio_id, old.report_type, old.status, -1),
            (date_trunc('month', new.report_date)::date, new.portfolio_id, new.report_type, new.status, 1);
          if random() < 1.0 / 64 then
            perform report_loads_monthly_fold();
          end if;
          return null;
        end $$`,
      sql`create function report_loads_monthly_clear() returns trigger language plpgsql as $$
          begin
            delete from report_loads_monthly;
            return null;
          end $$`,
      // The failed slices of a range (status, check, the dashboard's failures): a few index rows, not every ledger row of the range.
      sql`create index report_loads_failed on report_loads (report_date, portfolio_id, report_type) where status = 'failed'`,
      sql`create trigger report_loads_monthly_insert after insert on report_loads
          referencing new table as new_rows for each statement execute function report_loads_monthly_count_rows()`,
      sql`create trigger report_loads_monthly_delete after delete on report_loads
          referencing old table as old_rows for each statement execute function report_loads_monthly_count_rows()`,
      sql`create trigger report_loads_monthly_update after update of portfolio_id, report_type, report_date, status on report_loads
          for each row when (old.status is distinct from new.status or old.portfolio_id <> new.portfolio_id or old.report_type <> new.report_type
            or date_trunc('month', old.report_date) <> date_trunc('month', new.report_date))
          execute function report_loads_monthly_count_change()`,
      sql`create trigger report_loads_monthly_truncate after truncate on report_loads for each statement execute function report_loads_monthly_clear()`,
    ])
      await statement.execute(db);
  },
  async down(db: Kysely<unknown>) {
    await sql`drop table report_loads_monthly`.execute(db);
    await sql`drop index report_loads_failed`.execute(db);
    for (const name of ['report_loads_monthly_count_rows', 'report_loads_monthly_count_change', 'report_loads_monthly_clear', 'report_loads_monthly_fold'])
      await sql`drop function ${sql.id(name)}() cascade`.execute(db);
  },
};

/** What the migrations need of Postgres: its own types, and its steps of 0003 and 0005. */
export const POSTGRES_MIGRATIONS: MigrationDialect = {
  timestampType: 'timestamptz',
  realType: 'double precision',
  indexReportLineNumber: postgresIndexReportLineNumber,
  lineageAndAnalytics: postgresLineageAndAnalytics,
  ledgerRollup: postgresLedgerRollup,
};
