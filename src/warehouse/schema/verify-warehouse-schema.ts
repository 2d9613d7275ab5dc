import type { Kysely } from 'kysely';
import { ConfigError } from '../../errors/sync-error.js';
import { REPORT_REGISTRY } from '../../reports/report-registry.js';
import { REPORT_TABLES } from '../../reports/report-tables.js';
import { REPORT_TYPES, type ReportType } from '../../reports/report-types.js';
import type { DecimalColumnRule } from '../engine/decimal-column-rule.js';
import type { WarehouseHandle } from '../engine/warehouse-engine.js';
import { readWarehouseTables } from './read-warehouse-tables.js';
import type { Warehouse } from '../engine/warehouse-schema.js';
import type { CatalogueColumn, WarehouseTables } from '../engine/warehouse-tables.js';
import { writtenColumns } from './written-columns.js';

/** Portfolios named in the reload command; beyond this many the command says how many instead. */
const PORTFOLIOS_LISTED = 20;

/** The ledger columns the reload advice reads. */
const LEDGER_COLUMNS_READ = ['portfolio_id', 'report_type', 'report_date', 'status'] as const;

/**
 * Checks in the database's catalogue that every table and column report-sync writes is there
 * (the report tables as their definitions' rows have them, and the ledger), and that each report
 * table's decimal columns are of a type that keeps every value report-sync loads, so that a
 * damaged warehouse stops a command at start instead of failing each slice after its download, or
 * rounding what it loads without a word (a column rebuilt by hand as MySQL's `DECIMAL(10,2)`).
 *
 * Returns the damage rather than throwing it, so that a sync can stop (a `CONFIG_INVALID`
 * {@link ConfigError}: exit 2) while `status` warns and reads on; `undefined` when nothing is
 * wrong. Tables and columns the code does not write (an analyst's additions) are not its business.
 * The message lists what is missing (`index_report (table)`, `report_loads.error_code (column)`)
 * or narrowed, how to repair it, and the `run` that loads the lost rows again, from the ledger's dates.
 */
export async function verifyWarehouseSchema(warehouse: WarehouseHandle): Promise<ConfigError | undefined> {
  const tables = await readWarehouseTables(warehouse);
  const missing: string[] = [];
  const damaged = new Set<string>();
  let columnsMissing = false;
  for (const [table, columns] of writtenColumns()) {
    const present = tables.get(table);
    if (!present) {
      missing.push(`${table} (table)`);
      damaged.add(table);
      continue;
    }
    for (const column of columns) {
      if (present.has(column)) continue;
      missing.push(`${table}.${column} (column)`);
      damaged.add(table);
      columnsMissing = true;
    }
  }
  const rule = warehouse.engine.decimalColumn;
  const narrowed = roundingDecimalColumns(tables, rule);
  for (const { table } of narrowed) damaged.add(table);
  if (missing.length === 0 && narrowed.length === 0) return undefined;
  // Rows loaded through a narrowed column are all there, but rounded: a plain run would skip each file.
  const reload = await reloadAdvice(warehouse.db, damaged, tables.get('report_loads'), columnsMissing || narrowed.length > 0);
  const problems: string[] = [];
  if (missing.length > 0) {
    problems.push(
      `lacks ${missing.join(', ')}, which report-sync writes, so no slice can be loaded into it; ` +
        `report-sync migrate cannot re-create ${missing.length === 1 ? 'it' : 'them'}, as kysely_migration records every migration as applied`,
    );
  }
  if (narrowed.length > 0) {
    problems.push(
      `has decimal column${narrowed.length === 1 ? '' : 's'} of a type that would round what report-sync loads: ` +
        `${narrowed.map(({ table, column, type }) => `${table}.${column} (${type})`).join(', ')}; report-sync's migrations declare ${rule.declared}, which keeps every value exactly`,
    );
  }
  const repairs = [
    ...(missing.length > 0 ? ['re-create what is missing as src/warehouse/migrations/ define it'] : []),
    ...narrowed.map(({ table, column }) => rule.repair(table, column)),
  ];
  return new ConfigError(`the warehouse at ${warehouse.location} ${problems.join('; it also ')}. Restore the warehouse from a backup; or ${repairs.join('; ')}; then ${reload}`);
}

/** The report tables' decimal columns whose declared type would round (a missing one is said elsewhere). */
function roundingDecimalColumns(tables: WarehouseTables, rule: DecimalColumnRule): CatalogueColumn[] {
  const found: CatalogueColumn[] = [];
  for (const definition of REPORT_TABLES) {
    const present = tables.get(definition.table);
    for (const { name, kind } of definition.columns) {
      const type = present?.get(name);
      if (kind === 'decimal' && type !== undefined && !rule.keeps(type)) found.push({ table: definition.table, column: name, type });
    }
  }
  return found;
}

/**
 * What to load again once the damaged parts are repaired: the loaded slices of the damaged
 * tables. A re-created table is empty, which a plain run notices (the rows the ledger records are
 * not there) and loads each file again; a re-created column is empty, and a narrowed one rounded,
 * in rows that are all there, so a plain run would skip each file as unchanged: that takes `--force`.
 */
async function reloadAdvice(db: Kysely<Warehouse>, damaged: ReadonlySet<string>, ledger: ReadonlyMap<string, string> | undefined, force: boolean): Promise<string> {
  // The data-quality results are no rows of a slice: each load writes its file's again.
  if ([...damaged].every((table) => table === 'slice_checks')) {
    return 'run report-sync migrate to check: no slice needs loading again (slice_checks holds the data-quality results each load writes; a run with --force checks the loaded files again)';
  }
  const forceFlag = force ? ' --force' : '';
  const everything = `load every day the warehouse should hold again: report-sync run --from <first day> --to <last day>${forceFlag}`;
  if (!ledger || !LEDGER_COLUMNS_READ.every((column) => ledger.has(column))) return `${everything} (its ledger cannot say which days it held)`;
  // Damage to the ledger leaves its own rows unreliable: every loaded slice is loaded again.
  const types = damaged.has('report_loads') ? undefined : REPORT_TYPES.filter((type) => damaged.has(REPORT_REGISTRY[type].table));
  let pairs: { portfolio_id: number; report_type: string; first: unknown; last: unknown; slices: number | string | bigint }[];
  try {
    let query = db.selectFrom('report_loads').where('status', '=', 'loaded');
    if (types) query = query.where('report_type', 'in', types);
    pairs = await query
      .select(({ fn }) => ['portfolio_id', 'report_type', fn.min('report_date').as('first'), fn.max('report_date').as('last'), fn.countAll<number | string>().as('slices')])
      .groupBy(['portfolio_id', 'report_type'])
      .execute();
  } catch {
    return `${everything} (its ledger could not be read)`;
  }
  if (pairs.length === 0) return 'run report-sync migrate to check: its ledger lists no loaded slice whose rows were lost';
  const portfolios = [...new Set(pairs.map((pair) => Number(pair.portfolio_id)))].sort((a, b) => a - b);
  const reportTypes = REPORT_TYPES.filter((type: ReportType) => pairs.some((pair) => pair.report_type === type));
  const from = pairs.map((pair) => String(pair.first)).sort()[0]!;
  const to = pairs
    .map((pair) => String(pair.last))
    .sort()
    .at(-1)!;
  const slices = pairs.reduce((sum, pair) => sum + Number(pair.slices), 0);
  const portfolioFlag = portfolios.length <= PORTFOLIOS_LISTED ? ` --portfolios ${portfolios.join(',')}` : '';
  return (
    `load the ${slices} slice${slices === 1 ? '' : 's'} its ledger lists as loaded there again: ` +
    `report-sync run --from ${from} --to ${to}${portfolioFlag} --report-types ${reportTypes.join(',')}${forceFlag}` +
    `${portfolioFlag === '' ? ` (for each of its ${portfolios.length} portfolios)` : ''}` +
    (force
      ? ' (--force, because the rows are there but for what the damaged columns held: without it each file would be skipped as unchanged)'
      : ' (the run finds their rows gone and loads each file again)')
  );
}
