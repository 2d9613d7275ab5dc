import { setTimeout as sleep } from 'node:timers/promises';
import { SingleBar } from 'cli-progress';
import { SyncError } from '../errors.js';
import { planMissingSlices } from '../plan-missing-slices.js';
import { countSlices, planSlices } from '../plan-slices.js';
import { ExportQueue } from '../queue/export-queue.js';
import { createRedisConnector } from '../queue/redis-connection.js';
import { exitCodeOf, type RunReport } from '../runner/run-report.js';
import { reportDefinitionFor } from '../reports/report-definition-for.js';
import type { ReportType } from '../reports/report-types.js';
import { Ledger } from '../warehouse/ledger.js';
import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { createCliLogger, loadCliConfig, type CliIo } from './cli-io.js';
import { formatRunSummary } from './format-run-summary.js';
import { resolveRange, type RangeOptions } from './resolve-range.js';

export interface BackfillOptions extends RangeOptions {
  readonly config?: string;
  readonly onlyMissing?: boolean;
  readonly wait?: boolean;
}

/**
 * `report-sync backfill`: queues one job per slice of the range for the workers, at backfill
 * priority, with deterministic job ids so the same range added twice queues nothing twice.
 * `--only-missing` skips slices the ledger has as loaded or no_data; `--wait` follows the ledger
 * until every queued slice has an outcome, then prints the same summary as `run`.
 */
export async function backfillCommand(options: BackfillOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const { settings } = config;
  const range = resolveRange(options, settings);
  const { from, to } = range;
  const logger = createCliLogger(config, io, { progressBar: false });
  const connector = createRedisConnector(config.redisUrl, logger);
  const redis = connector.connect();
  let exportQueue: ExportQueue | undefined;
  let warehouse: Awaited<ReturnType<typeof connectWarehouse>> | undefined;
  try {
    await connector.waitUntilReady(redis, { timeoutMs: settings.startup.timeoutMs, signal: io.signal });
    warehouse = await connectWarehouse(config, { purpose: 'write' });
    exportQueue = new ExportQueue({ connection: redis, settings });
    const ledger = new Ledger(warehouse.db);
    const startedAt = new Date().toISOString();
    const startedMs = performance.now();
    const slices = options.onlyMissing ? planMissingSlices(range, ledger) : planSlices(range);
    const queued = await exportQueue.addSlices(slices, settings.queue.backfillPriority);
    const planned = countSlices(range);
    io.stdout.write(
      `Queued ${queued} slices from ${from} to ${to} (${planned} in the range${options.onlyMissing ? `, ${planned - queued} already loaded or no_data` : ''}) on queue ${settings.queue.name}.\n`,
    );
    if (!options.wait || queued === 0) return 0;

    const report = await waitForOutcomes({ io, ledger, exportQueue, filter: range, since: startedAt, queued, startedMs, signal: io.signal });
    io.stdout.write(formatRunSummary(report));
    return exitCodeOf(report);
  } finally {
    await exportQueue?.close();
    redis.disconnect();
    await warehouse?.close();
  }
}

interface WaitOptions {
  readonly io: CliIo;
  readonly ledger: Ledger;
  readonly exportQueue: ExportQueue;
  readonly filter: { from: string; to: string; portfolios: readonly number[]; reportTypes: readonly ReportType[] };
  readonly since: string;
  readonly queued: number;
  readonly startedMs: number;
  readonly signal: AbortSignal | undefined;
}

/** Follows the ledger (whichever workers write it) until every queued slice has an outcome. */
async function waitForOutcomes(options: WaitOptions): Promise<RunReport> {
  const { io, ledger, queued } = options;
  const bar = io.stderr.isTTY
    ? new SingleBar({
        stream: io.stderr,
        format: 'backfill [{bar}] {value}/{total} | loaded {loaded} | no data {noData} | failed {failed} | {rate}/s | eta {eta_formatted}',
        hideCursor: true,
        etaBuffer: 100,
      })
    : undefined;
  let counts = { loaded: 0, noData: 0, failed: 0 };
  const rowsWritten = { index_report: 0, constituent_report: 0 };
  bar?.start(queued, 0, { ...counts, rate: '0' });
  let lastLine = 0;
  let interrupted = false;
  try {
    for (;;) {
      const outcomes = await ledger.outcomesSince(options.filter, options.since);
      counts = { loaded: 0, noData: 0, failed: 0 };
      rowsWritten.index_report = 0;
      rowsWritten.constituent_report = 0;
      for (const outcome of outcomes) {
        if (outcome.status === 'loaded') {
          counts.loaded += outcome.slices;
          rowsWritten[reportDefinitionFor(outcome.reportType as ReportType).table] += outcome.rows;
        } else if (outcome.status === 'no_data') counts.noData += outcome.slices;
        else counts.failed += outcome.slices;
      }
      const finished = counts.loaded + counts.noData + counts.failed;
      const seconds = (performance.now() - options.startedMs) / 1000;
      bar?.update(Math.min(finished, queued), { ...counts, rate: (finished / Math.max(seconds, 0.001)).toFixed(1) });
      if (!bar && Date.now() - lastLine > 10_000) {
        lastLine = Date.now();
        io.stderr.write(`backfill: ${finished}/${queued} finished (loaded ${counts.loaded}, no data ${counts.noData}, failed ${counts.failed})\n`);
      }
      if (finished >= queued) break;
      // Nothing left in the queue but outcomes missing: a job ended without a ledger row (its
      // warehouse write failed); waiting longer would wait forever.
      if ((await options.exportQueue.unfinished()) === 0) {
        const again = await ledger.outcomesSince(options.filter, options.since);
        if (again.reduce((sum, outcome) => sum + outcome.slices, 0) >= queued) continue;
        break;
      }
      if (options.signal?.aborted) {
        interrupted = true;
        break;
      }
      await sleep(500);
    }
  } finally {
    bar?.stop();
  }
  const failedEntries = await ledger.entries(options.filter, { status: 'failed', checkedSince: options.since, limit: 200 });
  const finished = counts.loaded + counts.noData + counts.failed;
  return {
    planned: queued,
    loaded: counts.loaded,
    unchanged: 0,
    noData: counts.noData,
    failed: counts.failed,
    notAttempted: Math.max(0, queued - finished),
    retries: 0,
    rowsWritten,
    bytes: 0,
    failures: failedEntries.map((entry) => ({
      slice: { portfolioId: entry.portfolio_id, reportType: entry.report_type as ReportType, reportDate: entry.report_date },
      error: ledgerError(entry.error),
    })),
    stoppedBy: undefined,
    interrupted,
    durationMs: Math.round(performance.now() - options.startedMs),
  };
}

/** A failure as the ledger tells it ("CODE: message"), back as an error for the summary. */
function ledgerError(text: string | null): SyncError {
  const match = /^([A-Z_]+): ([\s\S]*)$/.exec(text ?? '');
  return new SyncError(match ? (match[1] as SyncError['code']) : 'UNEXPECTED', match ? match[2]! : (text ?? 'no reason recorded'));
}
