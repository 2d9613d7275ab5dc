import { describe, expect, expectTypeOf, it } from 'vitest';
import { toColumnName } from '../../../src/extract/column-names.js';
import type { ConstituentReportRow } from '../../../src/reports/constituent-report.js';
import type { IndexReportRow } from '../../../src/reports/index-report.js';
import { REPORT_REGISTRY, type ReportTableName } from '../../../src/reports/report-registry.js';
import { REPORT_TABLES } from '../../../src/reports/report-tables.js';
import { REPORT_TYPES, type ReportType } from '../../../src/reports/report-types.js';
import { rowColumns } from '../../../src/extract/row-builder.js';
import { rowsPerTable } from '../../../src/reports/rows-per-table.js';
import { syntheticReport } from '../../../src/simulator/synthetic-reports.js';
import type { Warehouse } from '../../../src/warehouse/engine/warehouse-schema.js';
import { writtenColumns } from '../../../src/warehouse/schema/written-columns.js';

describe('the report registry', () => {
  it('has a definition for every report type, each one of the report tables', () => {
    for (const type of REPORT_TYPES) {
      expect(REPORT_REGISTRY[type], type).toBeDefined();
      expect(REPORT_TABLES, type).toContain(REPORT_REGISTRY[type]);
    }
    expect(Object.keys(REPORT_REGISTRY).sort()).toEqual([...REPORT_TYPES].sort());
  });

  it('lists each table once, by one definition, in the order of the first type it holds', () => {
    expect(REPORT_TABLES.map((definition) => definition.table).slice(0, 2)).toEqual(['index_report', 'constituent_report']);
    expect(new Set(REPORT_TABLES.map((definition) => definition.table)).size).toBe(REPORT_TABLES.length);
    const firstTypes = REPORT_TABLES.map((definition) => REPORT_TYPES.findIndex((type) => REPORT_REGISTRY[type] === definition));
    expect(firstTypes).toEqual([...firstTypes].sort((a, b) => a - b));
  });

  it('shares a table between report types only when its rows carry report_type', () => {
    for (const definition of REPORT_TABLES) {
      const types = REPORT_TYPES.filter((type) => REPORT_REGISTRY[type] === definition);
      if (!definition.storesReportType) expect(types, definition.table).toHaveLength(1);
      expect(rowColumns(definition).includes('report_type')).toBe(definition.storesReportType);
    }
  });

  it('has every report table among the tables the code writes, with its row columns and then load_id', () => {
    const written = writtenColumns();
    for (const definition of REPORT_TABLES) expect(written.get(definition.table), definition.table).toEqual([...rowColumns(definition), 'load_id']);
  });

  it('gives every report table a row tally starting at 0, in table order', () => {
    expect(Object.entries(rowsPerTable())).toEqual(REPORT_TABLES.map((definition) => [definition.table, 0]));
    expect(rowsPerTable()).toMatchObject({ index_report: 0, constituent_report: 0 });
  });

  it.each(REPORT_TYPES)('has the simulator serve a %s sample that fills every column of its table', (type) => {
    const sample = syntheticReport({ portfolioId: 1001, reportType: type, reportDate: '2024-03-01' });
    const served = new Set(sample.columns.map((column) => toColumnName(column[sample.nativeName])));
    const missing = REPORT_REGISTRY[type].columns.map((column) => column.name).filter((name) => !served.has(name));
    expect(missing).toEqual([]);
    expect(sample.rows.length).toBeGreaterThan(0);
  });

  it('derives the row types, table names and Kysely schema from the definitions (checked by tsc)', () => {
    // These are compile-time assertions: `tsc --noEmit` fails if the derived types drift from
    // the rows the tables hold. The runtime part only shows the test ran.
    expectTypeOf<IndexReportRow>().toEqualTypeOf<{
      portfolio_id: number;
      report_date: string;
      line_number: number;
      effective_date: string;
      index_id: string;
      index_name: string | null;
      index_value: string | null;
      currency: string | null;
      close_market_value: string | null;
      open_market_value: string | null;
      close_divisor: string | null;
      open_divisor: string | null;
      extra: string | null;
      load_id: string | null;
    }>();
    expectTypeOf<ConstituentReportRow>().toEqualTypeOf<{
      portfolio_id: number;
      report_type: ReportType;
      report_date: string;
      line_number: number;
      effective_date: string;
      isin: string;
      security_name: string | null;
      security_ticker: string | null;
      exchange_code: string | null;
      closing_price: string | null;
      currency: string | null;
      closing_fx: string | null;
      index_shares: string | null;
      index_weighting: string | null;
      extra: string | null;
      load_id: string | null;
    }>();
    expectTypeOf<'index_report' | 'constituent_report'>().toExtend<ReportTableName>();
    expectTypeOf<ReportTableName>().toEqualTypeOf<(typeof REPORT_TABLES)[number]['table']>();
    expectTypeOf<keyof Warehouse>().toEqualTypeOf<ReportTableName | 'report_loads' | 'slice_checks' | 'report_loads_monthly'>();
    expectTypeOf<Warehouse['index_report']>().toEqualTypeOf<IndexReportRow>();
    expectTypeOf<Warehouse['constituent_report']>().toEqualTypeOf<ConstituentReportRow>();
    expect(REPORT_TABLES.length).toBeGreaterThanOrEqual(2);
  });
});
