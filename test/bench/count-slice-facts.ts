import type { Kysely } from 'kysely';
import { lazySyntheticReport, type SyntheticSizes } from '../../src/simulator/synthetic-reports.js';
import type { Slice } from '../../src/slice/slice.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import type { Warehouse } from '../../src/warehouse/engine/warehouse-schema.js';
import type { BenchFacts } from './bench-result.js';

/** What {@link countSliceFacts} counts: every field of {@link BenchFacts} about slices, ledger and rows. */
export type SliceFacts = Required<
  Pick<BenchFacts, 'slicesPlanned' | 'slicesRecorded' | 'slicesLoaded' | 'ledgerRowsPerSlice' | 'ledgerRowsUnplanned' | 'ledgerRowCount' | 'rowsExpected' | 'rowsLoaded'>
>;

/**
 * Reads back what a product run left in the warehouse for `slices`: their ledger rows (how many
 * slices have one, how many are `loaded`, the most rows of one slice, rows of slices not asked
 * for), and their rows in the report tables beside the rows the simulator's generator makes for
 * them (`sizes` as the simulator was given; revision 0, weekdays). Cheap at smoke size; at full
 * size it runs after the measured span.
 */
export async function countSliceFacts(db: Kysely<Warehouse>, slices: readonly Slice[], sizes: SyntheticSizes): Promise<SliceFacts> {
  const key = (portfolioId: number, reportType: string, reportDate: string) => `${portfolioId}|${reportType}|${reportDate}`;
  const planned = new Set(slices.map((slice) => key(slice.portfolioId, slice.reportType, slice.reportDate)));
  const dates = slices.map((slice) => slice.reportDate).sort();
  const from = dates[0] ?? '0000-01-01';
  const to = dates[dates.length - 1] ?? '0000-01-01';
  const reportTypes = [...new Set(slices.map((slice) => slice.reportType))];

  const ledger = await db
    .selectFrom('report_loads')
    .select(['portfolio_id', 'report_type', 'report_date', 'status', 'row_count'])
    .where('report_type', 'in', reportTypes)
    .where('report_date', '>=', from)
    .where('report_date', '<=', to)
    .execute();
  const ledgerRows = new Map<string, number>();
  let slicesLoaded = 0;
  let ledgerRowCount = 0;
  let ledgerRowsUnplanned = 0;
  for (const row of ledger) {
    const rowKey = key(Number(row.portfolio_id), row.report_type, row.report_date);
    if (!planned.has(rowKey)) {
      ledgerRowsUnplanned += 1;
      continue;
    }
    ledgerRows.set(rowKey, (ledgerRows.get(rowKey) ?? 0) + 1);
    if (row.status === 'loaded') slicesLoaded += 1;
    ledgerRowCount += Number(row.row_count ?? 0);
  }

  const tableRows = new Map<string, number>();
  if (reportTypes.includes('index')) {
    const counted = await db
      .selectFrom('index_report')
      .select(['portfolio_id', 'report_date', (eb) => eb.fn.countAll().as('rows')])
      .where('report_date', '>=', from)
      .where('report_date', '<=', to)
      .groupBy(['portfolio_id', 'report_date'])
      .execute();
    for (const row of counted) tableRows.set(key(Number(row.portfolio_id), 'index', row.report_date), Number(row.rows));
  }
  const constituentTypes = reportTypes.filter((reportType) => reportType !== 'index');
  if (constituentTypes.length > 0) {
    const counted = await db
      .selectFrom('constituent_report')
      .select(['portfolio_id', 'report_type', 'report_date', (eb) => eb.fn.countAll().as('rows')])
      .where('report_type', 'in', constituentTypes)
      .where('report_date', '>=', from)
      .where('report_date', '<=', to)
      .groupBy(['portfolio_id', 'report_type', 'report_date'])
      .execute();
    for (const row of counted) tableRows.set(key(Number(row.portfolio_id), row.report_type, row.report_date), Number(row.rows));
  }

  let rowsLoaded = 0;
  let rowsExpected = 0;
  for (const slice of slices) {
    rowsLoaded += tableRows.get(key(slice.portfolioId, slice.reportType, slice.reportDate)) ?? 0;
    rowsExpected += lazySyntheticReport(slice, { sizes }).rowCount;
  }
  return {
    slicesPlanned: slices.length,
    slicesRecorded: ledgerRows.size,
    slicesLoaded,
    ledgerRowsPerSlice: Math.max(0, ...ledgerRows.values()),
    ledgerRowsUnplanned,
    ledgerRowCount,
    rowsExpected,
    rowsLoaded,
  };
}

/** {@link countSliceFacts} of the warehouse at `databaseUrl`, opened for the count and closed again. */
export async function countSliceFactsAt(databaseUrl: string, slices: readonly Slice[], sizes: SyntheticSizes): Promise<SliceFacts> {
  const warehouse = await openWarehouse(databaseUrl);
  try {
    return await countSliceFacts(warehouse.db, slices, sizes);
  } finally {
    await warehouse.close();
  }
}
