import { sql } from 'kysely';
import { DEEP_RECURSION } from '../helpers/deep-recursion.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import { restoreAnalyticsObjects } from '../../src/warehouse/schema/analytics-objects.js';

/** What {@link seedConstituentRows} writes: `rows` rows in slices of `rowsPerSlice`, portfolios from `firstPortfolio` on. */
export interface ConstituentSeed {
  readonly dialect: string;
  readonly rows: number;
  readonly rowsPerSlice: number;
  readonly firstPortfolio: number;
  /** Days of each portfolio's history, from 2015-01-01. */
  readonly days: number;
}

/** Rows per statement: each is its own transaction, so none grows without bound. */
const CHUNK_ROWS = 1_000_000;

/**
 * Fills `constituent_report` with years of `constituent.close` slices of other portfolios, as a
 * warehouse grown over time holds them: each portfolio's same securities every day (so the ISIN
 * index grows at as many places as a real one), and a `loaded` ledger row per slice. Generated
 * inside the database (a recursive CTE in SQLite, generate_series in Postgres), in the key's order,
 * with the secondary indexes dropped and then re-created as `migrate` re-creates them (built
 * sorted, which is many times quicker than twenty million inserts in random places).
 */
export async function seedConstituentRows(warehouse: WarehouseHandle, seed: ConstituentSeed): Promise<void> {
  const { db } = warehouse;
  const { rows, rowsPerSlice: per, firstPortfolio: first, days } = seed;
  // MySQL names an index within its table.
  const on = (table: string) => (seed.dialect === 'mysql' ? sql` on ${sql.table(table)}` : sql``);
  await sql`drop index constituent_report_isin${on('constituent_report')}`.execute(db);
  await sql`drop index report_loads_date${on('report_loads')}`.execute(db);
  for (let lo = 0; lo < rows; lo += CHUNK_ROWS) {
    const hi = Math.min(rows, lo + CHUNK_ROWS) - 1;
    if (seed.dialect === 'sqlite') {
      // Numbers written into the SQL: better-sqlite3 binds every JS number as a REAL, and `/` would then
      // divide exactly, giving each row a fractional portfolio id of its own.
      const [loSql, hiSql, firstSql, perSql, daysSql] = [lo, hi, first, per, days].map((value) => sql.lit(value));
      await sql`
        with recursive n(i) as (select ${loSql} union all select i + 1 from n where i < ${hiSql}),
          r as (select ${firstSql} + (i / ${perSql}) / ${daysSql} as p, date('2015-01-01', '+' || ((i / ${perSql}) % ${daysSql}) || ' days') as d, i % ${perSql} + 1 as line from n)
        insert into constituent_report (portfolio_id, report_type, report_date, line_number, effective_date, isin, security_name, security_ticker,
          exchange_code, closing_price, currency, closing_fx, index_shares, index_weighting, extra, load_id)
        select p, 'constituent.close', d, line, d, printf('XS%010d', p * 1000 + line), 'Security ' || line, 'T' || line, 'XLON',
          '101.25', 'GBP', '1.0', '1500', '0.002', null, null
        from r`.execute(db);
    } else if (seed.dialect === 'mysql') {
      await sql`${DEEP_RECURSION}
        insert into constituent_report (portfolio_id, report_type, report_date, line_number, effective_date, isin, security_name, security_ticker,
          exchange_code, closing_price, currency, closing_fx, index_shares, index_weighting, extra, load_id)
        with recursive n(i) as (select ${lo} union all select i + 1 from n where i < ${hi}),
          r as (select ${first} + (i div ${per}) div ${days} as p, date '2015-01-01' + interval ((i div ${per}) mod ${days}) day as d, i mod ${per} + 1 as line from n)
        select p, 'constituent.close', d, line, d, concat('XS', lpad(p * 1000 + line, 10, '0')), concat('Security ', line), concat('T', line), 'XLON',
          '101.25', 'GBP', '1.0', '1500', '0.002', null, null
        from r`.execute(db);
    } else {
      await sql`
        insert into constituent_report (portfolio_id, report_type, report_date, line_number, effective_date, isin, security_name, security_ticker,
          exchange_code, closing_price, currency, closing_fx, index_shares, index_weighting, extra, load_id)
        select p, 'constituent.close', d, line, d, 'XS' || lpad((p * 1000 + line)::text, 10, '0'), 'Security ' || line, 'T' || line, 'XLON',
          101.25, 'GBP', 1.0, 1500, 0.002, null, null
        from (select ${first}::int + (i / ${per}) / ${days} as p, date '2015-01-01' + ((i / ${per}) % ${days})::int as d, (i % ${per} + 1)::int as line
              from generate_series(${lo}::bigint, ${hi}::bigint) as g(i)) as r`.execute(db);
    }
  }
  const slices = Math.ceil(rows / per);
  if (seed.dialect === 'sqlite') {
    await sql`
      with recursive s(k) as (select 0 union all select k + 1 from s where k < ${sql.lit(slices - 1)})
      insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
      select ${sql.lit(first)} + k / ${sql.lit(days)}, 'constituent.close', date('2015-01-01', '+' || (k % ${sql.lit(days)}) || ' days'), 'loaded', ${sql.lit(per)}, 1,
        '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'
      from s`.execute(db);
    await restoreAnalyticsObjects(warehouse);
    // The seed went through the WAL: checkpointed now, not under the measured loads.
    await sql`pragma wal_checkpoint(truncate)`.execute(db);
  } else if (seed.dialect === 'mysql') {
    await sql`${DEEP_RECURSION}
      insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
      with recursive s(k) as (select 0 union all select k + 1 from s where k < ${slices - 1})
      select ${first} + k div ${days}, 'constituent.close', date '2015-01-01' + interval (k mod ${days}) day, 'loaded', ${per}, 1,
        '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'
      from s`.execute(db);
    await restoreAnalyticsObjects(warehouse);
    await sql`analyze table constituent_report, report_loads`.execute(db);
  } else {
    await sql`
      insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
      select ${first}::int + k / ${days}, 'constituent.close', date '2015-01-01' + (k % ${days})::int, 'loaded', ${per}, 1,
        '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'
      from generate_series(0, ${slices - 1}) as s(k)`.execute(db);
    await restoreAnalyticsObjects(warehouse);
    await sql`analyze constituent_report`.execute(db);
    await sql`analyze report_loads`.execute(db);
    // The seed's dirty pages written out now (as SQLite's WAL is checkpointed above), not by a
    // background checkpoint spread over the minutes of the measured loads.
    await sql`checkpoint`.execute(db);
  }
}
