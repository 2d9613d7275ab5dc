import { sql, type Kysely } from 'kysely';
import type { Warehouse } from '../../src/warehouse/engine/warehouse-schema.js';

/** What the fault tests compare with what the simulator served: table rows and the ledger's view of them. */
export interface WarehouseCounts {
  readonly index: number;
  readonly constituent: number;
  /** Ledger rows (slices with an outcome). */
  readonly ledger: number;
  /** Rows the ledger says the slices hold. */
  readonly ledgerRowCount: number;
  /** Slices that took more than one attempt. */
  readonly retried: number;
  /** Slices whose latest outcome is neither loaded nor no_data. */
  readonly notDone: number;
}

/** Counts the warehouse in one statement, on either dialect (counts come back as numbers or strings). */
export async function countWarehouse(db: Kysely<Warehouse>): Promise<WarehouseCounts> {
  const { rows } = await sql<Record<keyof WarehouseCounts, number | string | null>>`
    select (select count(*) from index_report) as "index",
           (select count(*) from constituent_report) as "constituent",
           (select count(*) from report_loads) as "ledger",
           (select sum(row_count) from report_loads) as "ledgerRowCount",
           (select count(*) from report_loads where attempts > 1) as "retried",
           (select count(*) from report_loads where status not in ('loaded', 'no_data')) as "notDone"`.execute(db);
  const row = rows[0]!;
  return {
    index: Number(row.index),
    constituent: Number(row.constituent),
    ledger: Number(row.ledger),
    ledgerRowCount: Number(row.ledgerRowCount ?? 0),
    retried: Number(row.retried),
    notDone: Number(row.notDone),
  };
}
