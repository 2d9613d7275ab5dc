import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { Slice } from '../../src/slice/slice.js';
import type { WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import { Ledger, type SliceCheckEntry } from '../../src/warehouse/ledger/ledger.js';
import { startCliProcess } from './cli-process.js';
import { startFileGateway, type FileGateway } from './file-gateway.js';
import { makeZip } from './make-zip.js';
import { startSyncRig, type CliResult, type SyncRig } from './sync-rig.js';
import { until } from './until.js';

/** The constituent CSV header of the spec's example file. */
export const CONSTITUENT_HEADER = 'Effective Date,ISIN,Security Name,Security Ticker,Exchange Code,Closing Price,Currency,Closing Fx,Index Shares,Index Weighting';

/** One line of a constituent file; what is left out takes a plain, valid value. */
export interface ConstituentLine {
  readonly isin: string;
  readonly weight: string;
  readonly price?: string;
  readonly fx?: string;
  readonly shares?: string;
  /** The effective date; the report date when left out. */
  readonly date?: string;
  readonly name?: string;
}

export function constituentCsv(lines: readonly ConstituentLine[], reportDate: string): string {
  const row = (l: ConstituentLine) => `${l.date ?? reportDate},${l.isin},${l.name ?? 'Acme'},ACM,XLON,${l.price ?? '12.5'},EUR,${l.fx ?? '1.1'},${l.shares ?? '100'},${l.weight}`;
  return [CONSTITUENT_HEADER, ...lines.map(row)].join('\r\n');
}

/** One record of an index file in JSON, of the value given. */
export function indexRecord(reportDate: string, indexValue: string): Record<string, unknown> {
  return {
    effectiveDate: reportDate,
    indexId: 'a1b2c3d4-0000-4000-a000-000000000001',
    indexName: 'Global Equity Index',
    indexValue,
    currency: 'EUR',
    closeMarketValue: '1000000.5',
    openMarketValue: '999000.25',
    closeDivisor: '1234.5',
    openDivisor: '1234.5',
  };
}

/**
 * For the suite it is called in: a sync rig (index files in JSON, constituent files as a CSV in a
 * ZIP) beside an upstream of the test's own that serves the files the test writes (the simulator
 * only issues the token), started before the suite's tests and closed after them. Its functions
 * need no `this`, so a suite can take them apart.
 */
export function useConstituentRig(dialect: WarehouseDialect) {
  let syncRig: SyncRig | undefined;
  let fileGateway: FileGateway | undefined;
  let nextConfig = 1;
  beforeAll(async () => {
    syncRig = await startSyncRig({ dialect, settings: { formats: { index: 'json', 'constituent.close': 'csv' } } });
    fileGateway = await startFileGateway();
  });
  afterAll(async () => {
    await fileGateway?.close();
    await syncRig?.close();
  });
  const rig = (): SyncRig => syncRig ?? notStarted();
  const upstream = (): FileGateway => fileGateway ?? notStarted();

  return {
    get upstream(): FileGateway {
      return upstream();
    },
    cli: (...args: Parameters<SyncRig['cli']>): Promise<CliResult> => rig().cli(...args),
    warehouse: (): Promise<WarehouseHandle> => rig().warehouse(),
    async serveConstituents(portfolioId: number, date: string, lines: readonly ConstituentLine[]): Promise<void> {
      upstream().serve(portfolioId, 'constituent.close', date, {
        body: await makeZip({ 'constituents.csv': constituentCsv(lines, date) }),
        contentType: 'application/zip',
        fileName: `${date}_${portfolioId}_constituents.zip`,
      });
    },
    serveIndex(portfolioId: number, date: string, records: readonly Record<string, unknown>[]): void {
      upstream().serve(portfolioId, 'index', date, { body: Buffer.from(JSON.stringify(records)), contentType: 'application/json', fileName: `${date}_${portfolioId}_index.json` });
    },
    /** Runs `report-sync <args>` against the upstream; `settings`, when given, from a config file of the call's own. */
    async cliOnUpstream(args: readonly string[], options: { settings?: SettingsInput; env?: Record<string, string> } = {}): Promise<CliResult> {
      const withConfig = [...args];
      if (options.settings) {
        const file = `checks-${nextConfig++}.json`;
        writeFileSync(join(rig().dir, file), JSON.stringify(options.settings));
        withConfig.push('--config', file);
      }
      return rig().cli(withConfig, { REPORT_BASE_URL: upstream().url, ...options.env });
    },
    /** The slice's ledger row (throws if it has none). */
    async ledger(slice: Slice) {
      const row = await new Ledger(await rig().warehouse()).row(slice);
      if (!row) throw new Error(`no ledger row for ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`);
      return row;
    },
    /** The slice's data-quality checks (its rows of slice_checks) by check name. */
    async checks(slice: Slice): Promise<Map<string, SliceCheckEntry>> {
      const entries = await new Ledger(await rig().warehouse()).sliceChecks(slice);
      return new Map(entries.map((entry) => [entry.check, entry]));
    },
    /** Starts `report-sync dashboard` (the compiled command) on a free port over the warehouse, runs `use` with its URL, and stops it. */
    async withDashboard(use: (url: string) => Promise<void>): Promise<void> {
      const dashboard = startCliProcess(['dashboard', '--port', '0'], { cwd: rig().dir, env: rig().env });
      try {
        await until(
          () => /at (http:\/\/\S+)/.test(dashboard.stdout()) || dashboard.child.exitCode !== null,
          15_000,
          () => `the dashboard to listen (output: ${dashboard.output()})`,
        );
        await use(/at (http:\/\/\S+)/.exec(dashboard.stdout())![1]!);
      } finally {
        dashboard.child.kill('SIGTERM');
        await dashboard.exited;
      }
    },
  };
}

function notStarted(): never {
  throw new Error('the constituent rig starts in beforeAll: use it inside a test or hook');
}
