import { attemptExportSlice } from '../../jobs/export-slice/handler.js';
import type { AppConfig } from '../config/load-config.js';
import { dotEnvHint } from '../config/dot-env-file.js';
import type { UpstreamConfig } from '../config/upstream-config.js';
import { SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { runInProcess } from '../runner/in-process-runner.js';
import { exitCodeOf, type RunReport } from '../runner/run-report.js';
import type { SliceRange } from '../slice/slice-range.js';
import { alertWebhookFromEnvironment } from '../alerts/alert-webhook.js';
import { runAlert } from '../alerts/run-alert.js';
import { retryCommand } from '../outcomes/retry-command.js';
import type { Slice } from '../slice/slice.js';
import { createSyncServices, type SyncServices } from './sync-services.js';
import type { CliIo } from './cli-io.js';
import { formatRunSummary } from './format-run-summary.js';
import { createProgressDisplay } from './progress-display.js';
import { startMetrics, warehouseReadiness, type CommandMetrics } from './start-metrics.js';

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
  /** `--metrics-port`: serve metrics and health checks while the run lasts. */
  readonly metricsPort?: number;
  /** What the alert calls this run (e.g. `run of 2024-03-01 to 2024-03-07`); none sends no alert (the demo). */
  readonly alert?: { readonly kind: 'run' | 'nightly'; readonly what: string };
  /** Runs after the summary, while the warehouse is still open (the demo's query). */
  readonly after?: (services: SyncServices, report: RunReport) => Promise<void>;
}

/** The in-process sync behind `run`, `nightly` and `demo`: plan, run with progress, summarise. */
export async function syncSlices(options: SyncSlicesOptions): Promise<number> {
  const { config, io, logger } = options;
  let exposed: CommandMetrics | undefined;
  let services: SyncServices | undefined;
  // Made first, so that a bad REPORT_ALERT_WEBHOOK_URL stops the command before any work (exit 2).
  const webhook = options.alert ? alertWebhookFromEnvironment(config.env, { logger, signal: io.signal, onResult: (result) => exposed?.metrics.alertSent(result) }) : undefined;
  try {
    exposed = await startMetrics(config, logger, { port: options.metricsPort, readiness: [warehouseReadiness(() => services?.warehouse)] });
    services = await createSyncServices({ config, upstream: options.upstream, logger, signal: io.signal, metrics: exposed?.metrics });
    const opened = services;
    const plan = await options.plan(opened);
    logger.info({ planned: plan.planned, warehouse: opened.warehouse.location }, plan.description);
    const progress = createProgressDisplay(plan.planned, io.stderr);
    let report: RunReport;
    try {
      report = await runInProcess({
        slices: plan.slices,
        planned: plan.planned,
        concurrency: config.settings.concurrency,
        retry: config.settings.retry,
        attemptSlice: (slice, attempt) => attemptExportSlice(slice, attempt, opened, { force: options.force }),
        onFinal: (outcome) => progress.onFinal(outcome),
        signal: io.signal,
      });
    } finally {
      progress.stop();
    }
    const retry = (report.notAttempted > 0 ? plan.range : undefined) ?? report.failures.span;
    report = { ...report, retryCommand: retry ? retryCommand('run', retry, options.configFile) : undefined };
    // A password cut at an unquoted `#` in .env reads as refused credentials: the refusal names the line to fix.
    const stopHint = dotEnvHint(config.dotEnvNotes, report.stoppedBy?.code);
    if (report.stoppedBy && stopHint) {
      report = { ...report, stoppedBy: new SyncError(report.stoppedBy.code, `${report.stoppedBy.message}; note: ${stopHint}`, { cause: report.stoppedBy }) };
    }
    const failureHint = stopHint ? undefined : report.failures.groups.map((group) => dotEnvHint(config.dotEnvNotes, group.code)).find(Boolean);
    io.stdout.write(formatRunSummary(report));
    if (failureHint) io.stdout.write(`\nNote: ${failureHint}\n`);
    if (options.alert?.kind === 'nightly' && exitCodeOf(report) === 0) exposed?.metrics.nightSucceeded(new Date());
    const alert = options.alert && runAlert(options.alert.kind, options.alert.what, report);
    // Waited for (bounded by its attempts and timeout), so that the command does not exit before its alert is out.
    if (alert) await webhook?.send(alert);
    await options.after?.(opened, report);
    return exitCodeOf(report);
  } finally {
    await webhook?.close();
    await exposed?.server.close();
    await services?.close();
  }
}
