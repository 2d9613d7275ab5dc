import { exportReport } from '../../jobs/export-report.js';
import type { AppConfig } from '../config/load-config.js';
import type { UpstreamConfig } from '../config/upstream-config.js';
import type { Logger } from '../logger.js';
import { runInProcess } from '../runner/in-process-runner.js';
import { exitCodeOf, type RunReport } from '../runner/run-report.js';
import type { SliceRange } from '../plan-slices.js';
import { retryCommand } from '../retry-command.js';
import type { Slice } from '../slice.js';
import { createSyncServices, type SyncServices } from '../sync-services.js';
import type { CliIo } from './cli-io.js';
import { formatRunSummary } from './format-run-summary.js';
import { createProgressDisplay } from './progress-display.js';

export interface SyncPlan {
  readonly slices: Iterable<Slice> | AsyncIterable<Slice>;
  readonly planned: number;
  /** One line saying what is about to happen. */
  readonly description: string;
  /** The range the slices come from: what the retry command covers when slices were left out. */
  readonly range?: SliceRange;
}

export interface SyncSlicesOptions {
  readonly config: AppConfig;
  readonly upstream: UpstreamConfig;
  readonly logger: Logger;
  readonly io: CliIo;
  /** Decides the slices once the warehouse is open (the nightly plan reads the ledger). */
  readonly plan: (services: SyncServices) => Promise<SyncPlan> | SyncPlan;
  /** Load files again even if unchanged (`--force`). */
  readonly force?: boolean;
  /** The `--config` file, repeated in the retry command. */
  readonly configFile?: string;
  /** Runs after the summary, while the warehouse is still open (the demo's query). */
  readonly after?: (services: SyncServices, report: RunReport) => Promise<void>;
}

/** The in-process sync behind `run`, `nightly` and `demo`: plan, run with progress, summarise. */
export async function syncSlices(options: SyncSlicesOptions): Promise<number> {
  const { config, io, logger } = options;
  const services = await createSyncServices({ config, upstream: options.upstream, logger, signal: io.signal });
  try {
    const plan = await options.plan(services);
    logger.info({ planned: plan.planned, warehouse: services.warehouse.location }, plan.description);
    const progress = createProgressDisplay(plan.planned, io.stderr);
    let report: RunReport;
    try {
      report = await runInProcess({
        slices: plan.slices,
        planned: plan.planned,
        concurrency: config.settings.concurrency,
        retry: config.settings.retry,
        attemptSlice: (slice, attempt) => exportReport(slice, attempt, services, { force: options.force }),
        onFinal: (outcome) => progress.onFinal(outcome),
        signal: io.signal,
      });
    } finally {
      progress.stop();
    }
    const retry = (report.notAttempted > 0 ? plan.range : undefined) ?? report.failures.span;
    report = { ...report, retryCommand: retry ? retryCommand('run', retry, options.configFile) : undefined };
    io.stdout.write(formatRunSummary(report));
    await options.after?.(services, report);
    return exitCodeOf(report);
  } finally {
    await services.close();
  }
}
