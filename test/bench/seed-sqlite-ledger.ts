import { Database } from '../../src/warehouse/sqlite/sqlite-driver.js';
import { planSlices, type SliceRange } from '../../src/slice/slice-range.js';
import { weekdayOf } from '../../src/dates/report-date.js';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';

/** What {@link seedSqliteLedger} wrote. */
export interface SeededLedger {
  readonly rows: number;
  /** Rows `loaded` or `no_data`: the slices `--only-missing` must skip. */
  readonly done: number;
}

/**
 * Fills the ledger of a new SQLite warehouse with one row per slice of `range`, as a finished
 * backfill leaves it: weekdays `loaded`, weekends `no_data`, and every `failedEvery`-th slice
 * `failed` (which `--only-missing` must queue again). Written straight through better-sqlite3 in
 * one transaction: a million rows through the loader would take longer than the benchmark.
 */
export async function seedSqliteLedger(path: string, range: SliceRange, failedEvery: number): Promise<SeededLedger> {
  const warehouse = await openWarehouse(`sqlite:${path}`);
  try {
    await migrateWarehouse(warehouse);
  } finally {
    await warehouse.close();
  }
  const db = new Database(path);
  try {
    const insert = db.prepare(
      `insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, error, updated_at, checked_at)
       values (?, ?, ?, ?, ?, 1, ?, ?, ?)`,
    );
    const at = new Date().toISOString();
    let rows = 0;
    let done = 0;
    db.transaction(() => {
      for (const slice of planSlices(range)) {
        rows += 1;
        const failed = rows % failedEvery === 0;
        const status = failed ? 'failed' : weekdayOf(slice.reportDate) % 6 === 0 ? 'no_data' : 'loaded';
        if (!failed) done += 1;
        insert.run(slice.portfolioId, slice.reportType, slice.reportDate, status, status === 'loaded' ? 25 : 0, failed ? 'EXPORT_SERVER_ERROR: seeded' : null, at, at);
      }
    })();
    return { rows, done };
  } finally {
    db.close();
  }
}
