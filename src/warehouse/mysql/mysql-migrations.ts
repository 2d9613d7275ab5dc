import { CompiledQuery, sql, type Kysely, type Migration, type RawBuilder } from 'kysely';
import { createLatestViews } from '../schema/migrations/0005-lineage-and-analytics.js';
import type { MigrationDialect } from '../engine/migration-dialect.js';

/*
 * MySQL and MariaDB commit before and after every statement that changes a table's definition:
 * no migration here can be undone by a rollback, and a crash inside one leaves it half done (the
 * next `migrate` then stops on what it finds there and says so). Kysely's migrator takes its own
 * named lock (GET_LOCK) on MySQL, so processes migrating at once still take turns.
 *
 * Every table is InnoDB, utf8mb4 with its binary collation. The types, the same in every migration:
 * - text that is part of a key: VARCHAR(255) (a TEXT column cannot be a key), free text MEDIUMTEXT;
 *   compared as the bytes they are ('Index' is not 'index');
 * - decimals: DECIMAL(65,30), the widest MySQL has (the row builder refuses a value it would round);
 * - report dates: DATE; points in time: ISO 8601 UTC text, as SQLite keeps them (DATETIME refuses
 *   the `Z` every timestamp of report-sync ends with, and holds no zone);
 * - `extra`: from 0005 on a LONGTEXT checked to be JSON (`json_valid`), kept byte for byte: what
 *   MariaDB's JSON type is, where MySQL 8's would keep each fractional number as a double.
 */

/** MySQL's steps of 0001-create-tables (see `createTables`): the same tables, in MySQL's types. */
export const mysqlCreateTables: Migration = {
  async up(db: Kysely<unknown>) {
    await runAll(db, [
      sql`create table index_report (
            portfolio_id integer not null, report_date date not null, effective_date date not null, index_id mediumtext not null, index_name mediumtext,
            index_value decimal(65,30), currency mediumtext, close_market_value decimal(65,30), open_market_value decimal(65,30),
            close_divisor decimal(65,30), open_divisor decimal(65,30), extra longtext
          ) engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`,
      sql`create index index_report_slice on index_report (portfolio_id, report_date)`,
      sql`create table constituent_report (
            portfolio_id integer not null, report_type varchar(255) not null, report_date date not null, line_number integer not null,
            effective_date date not null, isin varchar(255) not null, security_name mediumtext, security_ticker mediumtext, exchange_code mediumtext,
            closing_price decimal(65,30), currency mediumtext, closing_fx decimal(65,30), index_shares decimal(65,30), index_weighting decimal(65,30),
            extra longtext,
            constraint constituent_report_pk primary key (portfolio_id, report_type, report_date, line_number)
          ) engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`,
      sql`create index constituent_report_isin on constituent_report (isin, report_date)`,
      sql`create table report_loads (
            portfolio_id integer not null, report_type varchar(255) not null, report_date date not null,
            status varchar(16) not null check (status in ('loaded', 'no_data', 'failed')),
            row_count integer not null default 0, format mediumtext, file_name mediumtext, bytes bigint, content_sha256 mediumtext,
            attempts integer not null, error mediumtext, first_loaded_at varchar(32), updated_at varchar(32) not null, checked_at varchar(32) not null,
            constraint report_loads_pk primary key (portfolio_id, report_type, report_date)
          ) engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`,
      sql`create index report_loads_date on report_loads (report_date, status)`,
    ]);
  },
  async down(db: Kysely<unknown>) {
    await runAll(db, [sql`drop table report_loads`, sql`drop table constituent_report`, sql`drop table index_report`]);
  },
};

/** MySQL's steps of 0003-index-report-line-number (see `indexReportLineNumber`): the table rebuilt with its key, rows numbered per slice. */
export const mysqlIndexReportLineNumber: Migration = {
  async up(db: Kysely<unknown>) {
    await runAll(db, [
      sql`create table index_report_new (
            portfolio_id integer not null, report_date date not null, line_number integer not null, effective_date date not null,
            index_id mediumtext not null, index_name mediumtext, index_value decimal(65,30), currency mediumtext, close_market_value decimal(65,30),
            open_market_value decimal(65,30), close_divisor decimal(65,30), open_divisor decimal(65,30), extra longtext,
            constraint index_report_pk primary key (portfolio_id, report_date, line_number)
          ) engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`,
      // InnoDB keeps no order of rows without a key: each slice's rows are numbered in the order it reads them.
      sql`insert into index_report_new (portfolio_id, report_date, line_number, effective_date, index_id, index_name, index_value,
            currency, close_market_value, open_market_value, close_divisor, open_divisor, extra)
          select portfolio_id, report_date, row_number() over (partition by portfolio_id, report_date), effective_date,
            index_id, index_name, index_value, currency, close_market_value, open_market_value, close_divisor, open_divisor, extra
          from index_report`,
      sql`drop table index_report`,
      sql`rename table index_report_new to index_report`,
    ]);
  },
  async down(db: Kysely<unknown>) {
    await runAll(db, [sql`alter table index_report drop primary key, drop column line_number`, sql`create index index_report_slice on index_report (portfolio_id, report_date)`]);
  },
};

/** MySQL's steps of 0005-lineage-and-analytics (see `lineageAndAnalytics`). */
export const mysqlLineageAndAnalytics: Migration = {
  async up(db: Kysely<unknown>) {
    await runAll(db, [
      sql`alter table report_loads add column load_id char(36), add column loaded_at varchar(32)`,
      // A version 4 UUID in the form the loader writes (crypto.randomUUID()): MySQL's uuid() makes version 1.
      sql`update report_loads set
            load_id = lower(concat(hex(random_bytes(4)), '-', hex(random_bytes(2)), '-4', substr(hex(random_bytes(2)), 2), '-',
              substr('89ab', 1 + floor(rand() * 4), 1), substr(hex(random_bytes(2)), 2), '-', hex(random_bytes(6)))),
            loaded_at = case when status = 'loaded' then updated_at end
          where status = 'loaded' or content_sha256 is not null`,
      sql`alter table index_report add column load_id char(36)`,
      sql`alter table constituent_report add column load_id char(36)`,
      sql`update index_report as report join report_loads as ledger
            on ledger.portfolio_id = report.portfolio_id and ledger.report_type = 'index' and ledger.report_date = report.report_date
          set report.load_id = ledger.load_id where ledger.load_id is not null`,
      sql`update constituent_report as report join report_loads as ledger
            on ledger.portfolio_id = report.portfolio_id and ledger.report_type = report.report_type and ledger.report_date = report.report_date
          set report.load_id = ledger.load_id where ledger.load_id is not null`,
      // Text checked to be JSON, as MariaDB's JSON type is: MySQL 8's JSON type parses the document
      // and keeps each fractional number as a double, rounding the digits the service sent.
      sql`alter table index_report modify extra longtext, add constraint index_report_extra_json check (json_valid(extra))`,
      sql`alter table constituent_report modify extra longtext, add constraint constituent_report_extra_json check (json_valid(extra))`,
      sql`create unique index report_loads_load_id on report_loads (load_id)`,
      // MySQL has no partial index: status leads instead, so the loaded slices of a portfolio and report type are one range.
      sql`create index report_loads_loaded on report_loads (status, portfolio_id, report_type, report_date)`,
    ]);
    await createLatestViews(db);
  },
  async down(db: Kysely<unknown>) {
    await runAll(db, [
      sql`drop view latest_constituent_report`,
      sql`drop view latest_index_report`,
      sql`drop view latest_loaded_day`,
      sql`drop index report_loads_loaded on report_loads`,
      sql`drop index report_loads_load_id on report_loads`,
      sql`alter table index_report drop constraint index_report_extra_json, drop column load_id`,
      sql`alter table constituent_report drop constraint constituent_report_extra_json, drop column load_id`,
      sql`alter table report_loads drop column load_id, drop column loaded_at`,
    ]);
  },
};

/** MySQL's steps of 0006-slice-checks (see `sliceChecks`). */
export const mysqlSliceChecks: Migration = {
  async up(db: Kysely<unknown>) {
    await runAll(db, [
      sql`create table slice_checks (
            portfolio_id integer not null, report_type varchar(255) not null, report_date date not null, check_name varchar(255) not null,
            severity varchar(16) not null, outcome varchar(16) not null, measured double not null, threshold double not null,
            message mediumtext not null, checked_at varchar(32) not null,
            constraint slice_checks_pk primary key (portfolio_id, report_type, report_date, check_name)
          ) engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`,
      sql`create index slice_checks_date on slice_checks (report_date, outcome)`,
    ]);
  },
  async down(db: Kysely<unknown>) {
    await sql`drop table slice_checks`.execute(db);
  },
};

/** A ledger row's month, as `report_loads_monthly.month` holds it (`old` or `new` in a trigger). */
const mysqlMonthOf = (row: 'old' | 'new') => `date_format(${row}.report_date, '%Y-%m-01')`;

/** Appends a ledger row's change to its month's count: `old` counted out (-1), `new` counted in (+1). */
const mysqlAppendCount = (row: 'old' | 'new') => `
  insert into report_loads_monthly (month, portfolio_id, report_type, status, slices)
    values (${mysqlMonthOf(row)}, ${row}.portfolio_id, ${row}.report_type, ${row}.status, ${row === 'old' ? -1 : 1});`;

/**
 * MySQL's steps of 0007-ledger-rollup (see `ledgerRollup`): as on Postgres, the row triggers only
 * append each change as a row of its own (`pending`). Counting in place made the group
 * transactions that write slices at once take turns on each shared count, and two that reached
 * two counts in opposite orders deadlocked: InnoDB rolled one back, with every slice in it. An
 * appended row waits for no one (READ COMMITTED takes no gap locks, and no index is unique but the
 * key, which only grows). The rows are folded into one per key by `foldMonthlyCounts`, after every
 * so many commits of slices. Readers sum `slices` per key.
 *
 * An update that changes neither the status nor the slice's month (a re-check: `checked_at`,
 * `attempts`) appends nothing. TRUNCATE fires no trigger: empty the ledger with DELETE.
 */
export const mysqlLedgerRollup: Migration = {
  async up(db: Kysely<unknown>) {
    await runAll(db, [
      sql`create table report_loads_monthly (
            id bigint not null auto_increment,
            month date not null, portfolio_id integer not null, report_type varchar(255) not null, status varchar(16) not null, slices bigint not null,
            pending boolean not null default true,
            constraint report_loads_monthly_pk primary key (id)
          ) engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`,
      sql`create index report_loads_monthly_key on report_loads_monthly (month, portfolio_id, report_type, status, slices)`,
      sql`create index report_loads_monthly_pending on report_loads_monthly (pending, month, portfolio_id, report_type)`,
      sql`insert into report_loads_monthly (month, portfolio_id, report_type, status, slices, pending)
          select date_format(report_date, '%Y-%m-01'), portfolio_id, report_type, status, count(*), false from report_loads
          group by date_format(report_date, '%Y-%m-01'), portfolio_id, report_type, status`,
      // The failed slices of a range (status, check, the dashboard's failures): status leads, as MySQL has no partial index.
      sql`create index report_loads_failed on report_loads (status, report_date, portfolio_id, report_type)`,
      sql.raw(`create trigger report_loads_monthly_insert after insert on report_loads for each row begin ${mysqlAppendCount('new')} end`),
      sql.raw(`create trigger report_loads_monthly_update after update on report_loads for each row begin
          if not (old.status <=> new.status and old.portfolio_id <=> new.portfolio_id and old.report_type <=> new.report_type
            and ${mysqlMonthOf('old')} <=> ${mysqlMonthOf('new')}) then
            ${mysqlAppendCount('old')} ${mysqlAppendCount('new')}
          end if;
        end`),
      sql.raw(`create trigger report_loads_monthly_delete after delete on report_loads for each row begin ${mysqlAppendCount('old')} end`),
    ]);
  },
  async down(db: Kysely<unknown>) {
    await runAll(db, [
      sql`drop trigger report_loads_monthly_insert`,
      sql`drop trigger report_loads_monthly_update`,
      sql`drop trigger report_loads_monthly_delete`,
      sql`drop table report_loads_monthly`,
      sql`drop index report_loads_failed on report_loads`,
    ]);
  },
};

/**
 * MySQL's steps of 0008-monthly-counts-by-pair (see `monthlyCountsByPair`): the monthly counts
 * keyed pair first. `status` over every month counted groups them per pair; through the
 * month-first key MariaDB did that in a temporary table of every row, through this index in its
 * order, reading the index alone.
 */
export const mysqlMonthlyCountsByPair: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`create index report_loads_monthly_pair on report_loads_monthly (portfolio_id, report_type, status, month, slices)`.execute(db);
  },
  async down(db: Kysely<unknown>) {
    await sql`drop index report_loads_monthly_pair on report_loads_monthly`.execute(db);
  },
};

/** Moves a folded row's slices into its month, report type and status's total: `old` taken out, `new` put in. */
const mysqlMoveTotal = (row: 'old' | 'new') => `
  if not ${row}.pending then
    insert into report_loads_monthly_totals (month, report_type, status, slices)
      values (${row}.month, ${row}.report_type, ${row}.status, ${row === 'old' ? '-' : ''}${row}.slices)
      on duplicate key update slices = slices ${row === 'old' ? '-' : '+'} ${row}.slices;
  end if;`;

/**
 * The fold's named lock (see `foldMonthlyCounts`), waited for up to 5 s: a fold is a short
 * transaction. Named in full, as the fold names it: the statements are constant text.
 */
const FOLD_LOCK = 'report-sync:report_loads_monthly:fold';
const FOLD_LOCK_WAIT_SECONDS = 5;
const TAKE_FOLD_LOCK = CompiledQuery.raw("select get_lock('report-sync:report_loads_monthly:fold', 5) as locked");
const RELEASE_FOLD_LOCK = CompiledQuery.raw("do release_lock('report-sync:report_loads_monthly:fold')");

/**
 * MySQL's steps of 0009-monthly-totals (see `monthlyTotals`): `report_loads_monthly_totals`, the
 * folded monthly counts summed over every portfolio, per month, report type and status. `check`
 * counts a range's months per status over every configured portfolio; from the monthly counts
 * that sums a row per pair and month (1.3 M rows over ten years of 6,000 pairs), from these a row
 * per report type and month. Triggers on `report_loads_monthly` keep them, firing only for folded
 * rows (`pending` false): writers append pending rows and touch no total; the fold, one at a time
 * under its lock, moves its rows' slices in. Readers add the pending rows not yet folded.
 *
 * The totals hold nothing the monthly counts do not, so the migration starts by dropping what a
 * run of it cut short left, and sums the folded rows holding the fold's lock, so that no fold
 * moves a row between the sum and the triggers.
 */
export const mysqlMonthlyTotals: Migration = {
  async up(db: Kysely<unknown>) {
    const { rows } = await db.executeQuery<{ locked: number | string | null }>(TAKE_FOLD_LOCK);
    if (Number(rows[0]?.locked) !== 1) {
      throw new Error(
        `a fold of the ledger's monthly counts held the lock ${FOLD_LOCK} for ${FOLD_LOCK_WAIT_SECONDS} s, which a fold never takes that long: ` +
          `find the session holding it (select is_used_lock('${FOLD_LOCK}') gives its id in the process list), then run report-sync migrate again`,
      );
    }
    try {
      await runAll(db, [
        sql`drop trigger if exists report_loads_monthly_totals_insert`,
        sql`drop trigger if exists report_loads_monthly_totals_update`,
        sql`drop trigger if exists report_loads_monthly_totals_delete`,
        sql`drop table if exists report_loads_monthly_totals`,
        sql`create table report_loads_monthly_totals (
              month date not null, report_type varchar(255) not null, status varchar(16) not null, slices bigint not null,
              constraint report_loads_monthly_totals_pk primary key (month, report_type, status)
            ) engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`,
        sql`insert into report_loads_monthly_totals (month, report_type, status, slices)
            select month, report_type, status, sum(slices) from report_loads_monthly where not pending
            group by month, report_type, status`,
        sql.raw(`create trigger report_loads_monthly_totals_insert after insert on report_loads_monthly for each row begin ${mysqlMoveTotal('new')} end`),
        sql.raw(`create trigger report_loads_monthly_totals_update after update on report_loads_monthly for each row begin ${mysqlMoveTotal('old')} ${mysqlMoveTotal('new')} end`),
        sql.raw(`create trigger report_loads_monthly_totals_delete after delete on report_loads_monthly for each row begin ${mysqlMoveTotal('old')} end`),
      ]);
    } finally {
      await db.executeQuery(RELEASE_FOLD_LOCK);
    }
  },
  async down(db: Kysely<unknown>) {
    await runAll(db, [
      sql`drop trigger report_loads_monthly_totals_insert`,
      sql`drop trigger report_loads_monthly_totals_update`,
      sql`drop trigger report_loads_monthly_totals_delete`,
      sql`drop table report_loads_monthly_totals`,
    ]);
  },
};

async function runAll(db: Kysely<unknown>, statements: readonly RawBuilder<unknown>[]): Promise<void> {
  for (const statement of statements) await statement.execute(db);
}

/** What the migrations need of MySQL: its own types, and its own steps of every migration that creates or alters a key. */
export const MYSQL_MIGRATIONS: MigrationDialect = {
  timestampType: 'varchar(32)',
  realType: 'double precision',
  createTables: mysqlCreateTables,
  indexReportLineNumber: mysqlIndexReportLineNumber,
  lineageAndAnalytics: mysqlLineageAndAnalytics,
  sliceChecks: mysqlSliceChecks,
  ledgerRollup: mysqlLedgerRollup,
  monthlyCountsByPair: mysqlMonthlyCountsByPair,
  monthlyTotals: mysqlMonthlyTotals,
};
