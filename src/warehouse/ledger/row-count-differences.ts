import type { Kysely } from 'kysely';
import { rangeWindows, type SliceRange } from '../../slice/slice-range.js';
import { REPORT_REGISTRY } from '../../reports/report-registry.js';
import { REPORT_TABLES } from '../../reports/report-tables.js';
import { REPORT_TYPES, type ReportType } from '../../reports/report-types.js';
import { sliceKey, type Slice } from '../../slice/slice.js';
import { classifyWarehouseError } from '../engine/classify-warehouse-error.js';
import { sliceOfEntry } from './ledger.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/** A slice whose rows in the warehouse are not the number its ledger row records. */
export interface RowCountDifference {
  readonly slice: Slice;
  /** What the ledger says the warehouse holds (0 when the slice has no ledger row). */
  readonly ledgerRows: number;
  /** What the table holds. */
  readonly tableRows: number;
}

/**
 * Compares every slice's ledger `row_count` with the rows its table holds, over a range, counted
 * in SQL a month at a time: rows deleted behind the ledger's back (an analyst's DELETE, an older
 * backup restored) and rows with no ledger row both show up.
 */
export async function rowCountDifferences(db: Kysely<Warehouse>, range: SliceRange): Promise<RowCountDifference[]> {
  const differences: RowCountDifference[] = [];
  const wanted = new Set<string>(range.reportTypes);
  try {
    for (const { from, to } of rangeWindows(range)) {
      const held = new Map<string, { slice: Slice; rows: number }>();
      for (const definition of REPORT_TABLES) {
        // A table without report_type holds the rows of the one report type registered to it.
        const onlyType = REPORT_TYPES.find((type) => REPORT_REGISTRY[type] === definition)!;
        const table = db as unknown as Kysely<Record<string, { portfolio_id: number; report_type: string; report_date: string }>>;
        let query = table
          .selectFrom(definition.table)
          .select(({ fn }) => ['portfolio_id', 'report_date', fn.countAll<number | string>().as('rows')])
          .where('report_date', '>=', from)
          .where('report_date', '<=', to)
          .where('portfolio_id', 'in', [...range.portfolios])
          .groupBy(['portfolio_id', 'report_date']);
        if (definition.storesReportType) query = query.select('report_type').groupBy('report_type');
        for (const row of await query.execute()) {
          const reportType = (definition.storesReportType ? (row as unknown as { report_type: string }).report_type : onlyType) as ReportType;
          if (!wanted.has(reportType)) continue;
          const slice: Slice = { portfolioId: Number(row.portfolio_id), reportType, reportDate: String(row.report_date) };
          held.set(sliceKey(slice), { slice, rows: Number(row.rows) });
        }
      }
      const ledger = await db
        .selectFrom('report_loads')
        .select(['portfolio_id', 'report_type', 'report_date', 'row_count'])
        .where('report_date', '>=', from)
        .where('report_date', '<=', to)
        .where('portfolio_id', 'in', [...range.portfolios])
        .where('report_type', 'in', [...range.reportTypes])
        .execute();
      for (const row of ledger) {
        const slice = sliceOfEntry(row);
        const key = sliceKey(slice);
        const tableRows = held.get(key)?.rows ?? 0;
        held.delete(key);
        if (tableRows !== row.row_count) differences.push({ slice, ledgerRows: row.row_count, tableRows });
      }
      for (const { slice, rows } of held.values()) differences.push({ slice, ledgerRows: 0, tableRows: rows });
    }
  } catch (error) {
    throw classifyWarehouseError(error, 'comparing the ledger with the tables');
  }
  return differences.sort(
    (a, b) => a.slice.reportDate.localeCompare(b.slice.reportDate) || a.slice.portfolioId - b.slice.portfolioId || a.slice.reportType.localeCompare(b.slice.reportType),
  );
}
