import { sql } from 'kysely';
import { DEEP_RECURSION } from '../helpers/deep-recursion.js';
import { REPORT_TYPES } from '../../src/reports/report-types.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import { restoreAnalyticsObjects } from '../../src/warehouse/schema/analytics-objects.js';

/** A team's ledger after years: `portfolios` portfolios from 1 × every report type × `days` days from `from`. */
export interface LedgerSeed {
  readonly dialect: string;
  readonly portfolios: number;
  readonly days: number;
  readonly from: string;
}

/** Portfolios per statement: each is its own transaction (and, in Postgres, one batch of its triggers' work). */
const CHUNK_PORTFOLIOS = 25;

/**
 * The state of a seeded slice, in SQL over `p` (portfolio) and `day` (from 0), and in TypeScript
 * for counting what a seed holds: a month of 1% of the portfolios never attempted (a portfolio
 * added late), a failure every 97th day for 2% of them, no data at weekends, loaded otherwise.
 */
export function seededStatus(seed: Pick<LedgerSeed, 'days'>, p: number, day: number): 'missing' | 'failed' | 'no_data' | 'loaded' {
  if (p % 100 === 1 && day >= seed.days - 400 && day < seed.days - 370) return 'missing';
  if (p % 50 === 0 && day % 97 === 0) return 'failed';
  if (day % 7 === 5 || day % 7 === 6) return 'no_data';
  return 'loaded';
}

/**
 * Fills the ledger with the slices of {@link LedgerSeed} (see {@link seededStatus}), generated in
 * the database, with the ledger's secondary indexes dropped and then re-created as `migrate`
 * re-creates them. The monthly counts follow from the ledger's triggers, as for any write (MySQL's
 * appended rows then folded, as a running warehouse keeps them).
 */
export async function seedLedgerSlices(warehouse: WarehouseHandle, seed: LedgerSeed): Promise<void> {
  const { db } = warehouse;
  const { days } = seed;
  // MySQL names an index within its table.
  const on = seed.dialect === 'mysql' ? sql` on report_loads` : sql``;
  await sql`drop index report_loads_date${on}`.execute(db);
  await sql`drop index report_loads_loaded${on}`.execute(db);
  await sql`drop index report_loads_failed${on}`.execute(db);
  const types = sql.join(REPORT_TYPES.map((type) => sql`(${type})`));
  const status = sql`case when p % 50 = 0 and day % 97 = 0 then 'failed' when day % 7 in (5, 6) then 'no_data' else 'loaded' end`;
  const kept = sql`not (p % 100 = 1 and day >= ${days - 400} and day < ${days - 370})`;
  for (let lo = 1; lo <= seed.portfolios; lo += CHUNK_PORTFOLIOS) {
    const hi = Math.min(seed.portfolios, lo + CHUNK_PORTFOLIOS - 1);
    if (seed.dialect === 'sqlite') {
      await sql`
        with recursive d(day) as (select 0 union all select day + 1 from d where day < ${days - 1}),
          pf(p) as (select ${lo} union all select p + 1 from pf where p < ${hi}),
          t(name) as (values ${types})
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, error, error_code, updated_at, checked_at)
        select p, name, date(${seed.from}, '+' || day || ' days'), ${status}, case when ${status} = 'loaded' then 25 else 0 end, 1,
          case when ${status} = 'failed' then 'EXPORT_UNAVAILABLE: 503' end, case when ${status} = 'failed' then 'EXPORT_UNAVAILABLE' end,
          '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'
        from pf, t, d where ${kept}
        order by p, name, day`.execute(db);
    } else if (seed.dialect === 'mysql') {
      const names = sql.join(
        REPORT_TYPES.map((type) => sql`select ${type} as name`),
        sql` union all `,
      );
      await sql`${DEEP_RECURSION}
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, error, error_code, updated_at, checked_at)
        with recursive d(day) as (select 0 union all select day + 1 from d where day < ${days - 1}),
          pf(p) as (select ${lo} union all select p + 1 from pf where p < ${hi}),
          t as (${names})
        select p, name, cast(${seed.from} as date) + interval day day, ${status}, case when ${status} = 'loaded' then 25 else 0 end, 1,
          case when ${status} = 'failed' then 'EXPORT_UNAVAILABLE: 503' end, case when ${status} = 'failed' then 'EXPORT_UNAVAILABLE' end,
          '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'
        from pf, t, d where ${kept}
        order by p, name, day`.execute(db);
    } else {
      await sql`
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, error, error_code, updated_at, checked_at)
        select p, name, cast(${seed.from} as date) + day, ${status}, case when ${status} = 'loaded' then 25 else 0 end, 1,
          case when ${status} = 'failed' then 'EXPORT_UNAVAILABLE: 503' end, case when ${status} = 'failed' then 'EXPORT_UNAVAILABLE' end,
          '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'
        from generate_series(${lo}::int, ${hi}::int) as pf(p), (values ${types}) as t(name), generate_series(0, ${days - 1}) as d(day)
        where ${kept}
        order by p, name, day`.execute(db);
    }
  }
  await restoreAnalyticsObjects(warehouse);
  // SQLite: the seed went through the WAL; checkpointed now, not under the measured loads.
  if (seed.dialect === 'sqlite') await sql`pragma wal_checkpoint(truncate)`.execute(db);
  // Postgres: the statistics and visibility a running warehouse's autovacuum keeps; without them
  // the planner takes the monthly counts (folded by the triggers, so full of dead rows) for a few rows.
  if (seed.dialect === 'postgres') {
    await sql`analyze report_loads`.execute(db);
    await sql`vacuum analyze report_loads_monthly`.execute(db);
  }
  if (seed.dialect === 'mysql') {
    // The triggers appended a row per slice; a running warehouse folds them as it goes (after every
    // so many commits of slices), so the seed ends with them folded, as migration 0007 counts them.
    // Every row is pending, so the monthly totals (0009) hold none of them: TRUNCATE, which fires
    // no trigger, leaves the totals right, where DELETE ran a trigger for each of the 20 M rows.
    await sql`truncate table report_loads_monthly`.execute(db);
    await sql`insert into report_loads_monthly (month, portfolio_id, report_type, status, slices, pending)
      select date_format(report_date, '%Y-%m-01'), portfolio_id, report_type, status, count(*), false from report_loads
      group by date_format(report_date, '%Y-%m-01'), portfolio_id, report_type, status`.execute(db);
    // OPTIMIZE recreates the table with compact indexes (and analyzes it), as earlier runs measured
    // it: the pair-first key, filled here out of its order, would otherwise hold half-empty pages.
    await sql`optimize table report_loads_monthly`.execute(db);
    await sql`analyze table report_loads`.execute(db);
  }
}
