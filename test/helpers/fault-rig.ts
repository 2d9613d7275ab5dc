import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import { REPORT_REGISTRY } from '../../src/reports/report-registry.js';
import type { ReportType } from '../../src/reports/report-types.js';
import { renderJson, renderZip } from '../../src/simulator/render-export.js';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';
import type { Slice } from '../../src/slice/slice.js';
import type { WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import { startMisbehavingGateway, type MisbehavingGateway } from './misbehaving-gateway.js';
import { startSyncRig, type CliResult, type SyncRig } from './sync-rig.js';

/** A Monday: the simulator has data for it. */
export const FAULT_DAY = '2024-05-06';

/** The spec's CSV header for constituent reports. */
export const CONSTITUENT_HEADER = 'Effective Date,ISIN,Security Name,Security Ticker,Exchange Code,Closing Price,Currency,Closing Fx,Index Shares,Index Weighting';

/** Quick retries and short timeouts, so that every fault case ends in a second or two. */
const FAULT_SETTINGS: SettingsInput = {
  concurrency: 1,
  retry: { attempts: 3, baseDelayMs: 5, maxDelayMs: 20, maxRetryAfterMs: 5_000 },
  http: { headersTimeoutMs: 600, bodyTimeoutMs: 600, keepAliveTimeoutMs: 1_000 },
  limits: { maxUncompressedBytes: 2 * 1024 * 1024 },
};

export interface FaultRun extends CliResult {
  readonly elapsedMs: number;
}

export interface FaultRunOptions {
  /** `simulator` (the bundled one, scripted or not) or `gateway` (the misbehaving one). @defaultValue 'simulator' */
  readonly through?: 'simulator' | 'gateway';
  /** Settings layered over the rig's for this run only (written to a file passed with `--config`). */
  readonly settings?: SettingsInput;
  readonly env?: Record<string, string | undefined>;
}

/**
 * The fault suite's rig: the simulator's identity provider and gateway, a misbehaving gateway
 * beside it, a SQLite warehouse, and the real CLI run in-process, one slice per run. Every slice
 * handed out has a portfolio of its own, so cases never see each other's rows.
 */
export async function startFaultRig(settings: SettingsInput = {}, options: { dialect?: WarehouseDialect } = {}) {
  const rig: SyncRig = await startSyncRig({
    dialect: options.dialect,
    settings: {
      ...FAULT_SETTINGS,
      ...settings,
      http: { ...FAULT_SETTINGS.http, ...settings.http },
      limits: { ...FAULT_SETTINGS.limits, ...settings.limits },
    },
  });
  const gateway: MisbehavingGateway = await startMisbehavingGateway();
  let nextPortfolio = 3001;
  let nextConfig = 1;

  return {
    rig,
    gateway,
    /** A new slice (portfolio of its own) of `reportType` on {@link FAULT_DAY}. */
    slice(reportType: ReportType): Slice {
      return { portfolioId: nextPortfolio++, reportType, reportDate: FAULT_DAY };
    },
    /** `report-sync run` for exactly this slice, timed. */
    async run(slice: Slice, options: FaultRunOptions = {}): Promise<FaultRun> {
      const args = ['run', '--from', slice.reportDate, '--to', slice.reportDate, '--portfolios', String(slice.portfolioId), '--report-types', slice.reportType];
      if (options.settings) {
        const file = `fault-settings-${nextConfig++}.json`;
        writeFileSync(join(rig.dir, file), JSON.stringify(options.settings));
        args.push('--config', file);
      }
      const env = { ...(options.through === 'gateway' ? { REPORT_BASE_URL: gateway.url } : {}), ...options.env };
      const startedAt = performance.now();
      const result = await rig.cli(args, env);
      return { ...result, elapsedMs: performance.now() - startedAt };
    },
    /** The file the simulator serves for the slice (revision 0), for a misbehaving gateway to serve too. */
    async goodFile(slice: Slice): Promise<{ body: Buffer; headers: Record<string, string> }> {
      const report = lazySyntheticReport(slice);
      const zip = slice.reportType !== 'index';
      const parts: Buffer[] = [];
      for await (const part of zip ? renderZip(report) : renderJson(report)) parts.push(Buffer.from(part as Buffer | string));
      return {
        body: Buffer.concat(parts),
        headers: {
          'Content-Type': zip ? 'application/zip' : 'application/json',
          'Content-Disposition': `attachment; filename="${report.fileBaseName}.${zip ? 'zip' : 'json'}"`,
        },
      };
    },
    /** Loads the simulator's file for the slice and returns its rows: the "earlier rows" a bad file must not touch; `elapsedMs` is how long that run took. */
    async loadGood(slice: Slice) {
      const result = await this.run(slice);
      expect(result.code, result.stdout).toBe(0);
      const rows = await this.rows(slice);
      expect(rows.length).toBeGreaterThan(0);
      return { rows, ledger: await this.ledger(slice), elapsedMs: result.elapsedMs };
    },
    async ledger(slice: Slice) {
      const warehouse = await rig.warehouse();
      return warehouse.db
        .selectFrom('report_loads')
        .selectAll()
        .where('portfolio_id', '=', slice.portfolioId)
        .where('report_type', '=', slice.reportType)
        .where('report_date', '=', slice.reportDate)
        .executeTakeFirstOrThrow();
    },
    /** The slice's rows, in file order. */
    async rows(slice: Slice): Promise<Record<string, unknown>[]> {
      const warehouse = await rig.warehouse();
      const definition = REPORT_REGISTRY[slice.reportType];
      let query = warehouse.db.selectFrom(definition.table).selectAll().where('portfolio_id', '=', slice.portfolioId).where('report_date', '=', slice.reportDate);
      if (definition.storesReportType) query = query.where('report_type', '=', slice.reportType);
      return (await query.execute()) as Record<string, unknown>[];
    },
    /** Files a bad file must never leave behind in the project directory. */
    dir: rig.dir,
    async close(): Promise<void> {
      await gateway.close();
      await rig.close();
    },
  };
}

export type FaultRig = Awaited<ReturnType<typeof startFaultRig>>;
