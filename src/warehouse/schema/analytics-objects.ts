import { sql, type RawBuilder } from 'kysely';
import type { IndexDefinition } from '../engine/index-definition.js';
import type { WarehouseEngine, WarehouseHandle } from '../engine/warehouse-engine.js';

/** An index or view of the warehouse: no data of its own, so it can be re-created from its definition at any time. */
interface AnalyticsObject {
  readonly kind: 'index' | 'view';
  readonly name: string;
  /** The statement that creates it, doing nothing when it is there already (two `migrate`s at once). */
  readonly create: (engine: WarehouseEngine) => RawBuilder<unknown>;
  /** Whether the engine's migrations make it, when not every engine's do. */
  readonly madeBy?: (engine: WarehouseEngine) => boolean;
}

/**
 * Every index and view the migrations leave (0001, 0005, 0006, 0007, 0008), as they define them now, in an
 * order that creates a view after the views it reads. A migration never changes once shipped:
 * one that changes an index or view must change its definition here too (the test that drops and
 * re-creates them compares the result with a freshly migrated warehouse).
 */
const ANALYTICS_OBJECTS: readonly AnalyticsObject[] = [
  index({ name: 'constituent_report_isin', table: 'constituent_report', columns: ['isin', 'report_date'] }),
  index({ name: 'report_loads_date', table: 'report_loads', columns: ['report_date', 'status'] }),
  index({ name: 'report_loads_load_id', table: 'report_loads', columns: ['load_id'], unique: true }),
  index({ name: 'report_loads_loaded', table: 'report_loads', columns: ['portfolio_id', 'report_type', 'report_date'], where: { column: 'status', equals: 'loaded' } }),
  index({ name: 'report_loads_failed', table: 'report_loads', columns: ['report_date', 'portfolio_id', 'report_type'], where: { column: 'status', equals: 'failed' } }),
  index({ name: 'slice_checks_date', table: 'slice_checks', columns: ['report_date', 'outcome'] }),
  {
    ...index({ name: 'report_loads_monthly_pair', table: 'report_loads_monthly', columns: ['portfolio_id', 'report_type', 'status', 'month', 'slices'] }),
    madeBy: (engine) => engine.migrations.monthlyCountsByPair !== undefined,
  },
  view(
    'latest_loaded_day',
    sql`select ledger.portfolio_id, ledger.report_type, ledger.report_date, ledger.row_count, ledger.load_id, ledger.loaded_at,
          ledger.format, ledger.file_name, ledger.bytes, ledger.content_sha256
        from report_loads as ledger
        join (
          select portfolio_id, report_type, max(report_date) as report_date
          from report_loads where status = 'loaded' group by portfolio_id, report_type
        ) as latest on latest.portfolio_id = ledger.portfolio_id and latest.report_type = ledger.report_type and latest.report_date = ledger.report_date`,
  ),
  view(
    'latest_index_report',
    sql`select report.portfolio_id, report.report_date, report.line_number, report.effective_date, report.index_id, report.index_name,
          report.index_value, report.currency, report.close_market_value, report.open_market_value, report.close_divisor, report.open_divisor,
          report.extra, report.load_id
        from index_report as report
        join latest_loaded_day as latest
          on latest.portfolio_id = report.portfolio_id and latest.report_type = 'index' and latest.report_date = report.report_date`,
  ),
  view(
    'latest_constituent_report',
    sql`select report.portfolio_id, report.report_type, report.report_date, report.line_number, report.effective_date, report.isin,
          report.security_name, report.security_ticker, report.exchange_code, report.closing_price, report.currency, report.closing_fx,
          report.index_shares, report.index_weighting, report.extra, report.load_id
        from constituent_report as report
        join latest_loaded_day as latest
          on latest.portfolio_id = report.portfolio_id and latest.report_type = report.report_type and latest.report_date = report.report_date`,
  ),
];

function index(definition: IndexDefinition): AnalyticsObject {
  // Each dialect says an index its own way: only some have partial ones (see `WarehouseEngine.createIndex`).
  return { kind: 'index', name: definition.name, create: (engine) => engine.createIndex(definition) };
}

function view(name: string, query: RawBuilder<unknown>): AnalyticsObject {
  // Each dialect has its own way to create a view only where it is missing (see `WarehouseEngine.createView`).
  return { kind: 'view', name, create: (engine) => engine.createView(name, query) };
}

/**
 * The indexes and views of report-sync the warehouse lacks (dropped by hand, or lost in a partial
 * restore), each as `view latest_loaded_day` or `index report_loads_loaded`. Nothing is lost with
 * them, but analysts' queries of a missing view fail and a missing index makes them slow.
 */
export async function missingAnalyticsObjects(warehouse: WarehouseHandle): Promise<string[]> {
  const present = await presentObjects(warehouse);
  return objectsOf(warehouse.engine)
    .filter((object) => !present.has(`${object.kind} ${object.name}`))
    .map((object) => `${object.kind} ${object.name}`);
}

function objectsOf(engine: WarehouseEngine): AnalyticsObject[] {
  return ANALYTICS_OBJECTS.filter((object) => object.madeBy?.(engine) ?? true);
}

/**
 * Re-creates the indexes and views the warehouse lacks, as the migrations define them (see
 * {@link missingAnalyticsObjects}); the tables they read must be there. Safe to run from several
 * processes at once. An index over a big table takes a while to build (on Postgres, writes to the
 * table wait meanwhile), so only `migrate` does this, never a sync.
 * @returns what was re-created, as {@link missingAnalyticsObjects} names it
 */
export async function restoreAnalyticsObjects(warehouse: WarehouseHandle): Promise<string[]> {
  const missing = new Set(await missingAnalyticsObjects(warehouse));
  for (const object of objectsOf(warehouse.engine)) {
    if (missing.has(`${object.kind} ${object.name}`)) await object.create(warehouse.engine).execute(warehouse.db);
  }
  return [...missing];
}

/** `kind name` of every index and view in the schema report-sync's unqualified names reach. */
async function presentObjects(warehouse: Pick<WarehouseHandle, 'db' | 'engine'>): Promise<ReadonlySet<string>> {
  return warehouse.engine.readIndexesAndViews(warehouse.db);
}
