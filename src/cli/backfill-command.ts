import { setTimeout as sleep } from 'node:timers/promises';
import { SingleBar } from 'cli-progress';
import { alertWebhookFromEnvironment } from '../alerts/alert-webhook.js';
import { runAlert } from '../alerts/run-alert.js';
import { UsageError } from '../errors/sync-error.js';
import { countSelectedSlices, planSelectedSlices } from '../planning/plan-selected-slices.js';
import { countSlices, rangeWindows, type SliceRange } from '../slice/slice-range.js';
import type { BackfillPlan } from '../queue/backfill-plan.js';
import { ExportQueue } from '../queue/export-queue.js';
import { startBackfill, type StartedBackfill } from '../queue/start-backfill.js';
import { createRedisConnector } from '../queue/redis-connection.js';
import { retryCommand } from '../outcomes/retry-command.js';
import { exitCodeOf, type RunReport } from '../runner/run-report.js';
import { sliceSelection, type SliceSelection, type SliceSelectionOptions } from '../selection/slice-selection.js';
import { describeSlice, sliceKey, type Slice } from '../slice/slice.js';
import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { Ledger, sliceOfEntry, type FinishedSince } from '../warehouse/ledger/ledger.js';
import { type OutcomeTally, tallyOutcomes as tally } from '../warehouse/ledger/tally-outcomes.js';
import { warehouseNow } from '../warehouse/warehouse-now.js';
import { NO_WARNINGS } from '../outcomes/warning-groups.js';
import { createCliLogger, loadCliConfig, type CliIo } from './cli-io.js';
import { formatRunSummary } from './format-run-summary.js';
import { printDryRun } from './print-dry-run.js';
import { resolveRange, type RangeOptions } from './resolve-range.js';
import { countOf } from '../text/count-of.js';

export interface BackfillOptions extends RangeOptions, SliceSelectionOptions {
  readonly config?: string;
  readonly force?: boolean;
  readonly wait?: boolean;
  /** Say what would be queued and how long the workers would take; connect to no Redis, queue nothing. */
  readonly dryRun?: boolean;
  /** With `dryRun`: print the plan as JSON. */
  readonly json?: boolean;
  /** With `dryRun`: seconds per export request for the estimate, instead of the assumed figure. */
  readonly requestSeconds?: number;
}

/** Lost slices named in the summary; the rest are counted. */
const LOST_NAMED = 5;

/**
 * `report-sync backfill`: keeps the backfill in Redis as a plan and queues its first window of
 * slices at backfill priority; the workers queue the rest as they finish (see `startBackfill`).
 * Job ids are deterministic, so a slice whose job is pending is not queued twice but one whose job
 * finished is. The selection flags are described in the CLI help; `--dry-run` needs no Redis,
 * `--wait` prints the `run` summary.
 */
export async function backfillCommand(options: BackfillOptions, io: CliIo): Promise<number> {
  if (!options.dryRun && (options.json || options.requestSeconds !== undefined)) {
    throw new UsageError('--json and --request-seconds go with --dry-run only: add --dry-run to see the plan, or leave them out to queue');
  }
  const config = loadCliConfig(io, options);
  const { settings } = config;
  const range = resolveRange(options, settings);
  const selection = sliceSelection(options);
  // Before Redis is connected to: a dry run needs none.
  if (options.dryRun) return printDryRun({ command: 'backfill', config, range, selection, json: options.json, requestSeconds: options.requestSeconds }, io);
  const { from, to } = range;
  const logger = createCliLogger(config, io, { progressBar: false });
  const webhook = options.wait ? alertWebhookFromEnvironment(config.env, { logger, signal: io.signal }) : undefined;
  const connector = createRedisConnector(config.redisUrl, logger, { clusterNodes: config.redisClusterNodes, prefix: settings.queue.prefix });
  const redis = connector.connect();
  let exportQueue: ExportQueue | undefined;
  let warehouse: Awaited<ReturnType<typeof connectWarehouse>> | undefined;
  try {
    await connector.waitUntilReady(redis, { timeoutMs: settings.startup.timeoutMs, signal: io.signal });
    warehouse = await connectWarehouse(config, { purpose: 'write', signal: io.signal, logger });
    exportQueue = new ExportQueue({ connection: redis, settings });
    const ledger = new Ledger(warehouse);
    // The warehouse's clock, which stamps every outcome: a worker's clock may be behind this host's.
    const since = await warehouseNow(warehouse);
    const startedMs = performance.now();
    const planned = countSlices(range);
    const started = await startBackfill({
      exportQueue,
      ledger,
      range,
      selection,
      force: options.force === true,
      queue: settings.queue,
      since,
      signal: io.signal,
      onBatch: queueingProgress(io, planned),
    });
    io.stdout.write(`${describeStarted({ started, planned, range, selection, queueName: settings.queue.name })}\n`);
    if (started.step?.interrupted) {
      const handed = started.step.handed;
      io.stdout.write(
        `Stopped by the signal before queueing the whole range: ${countOf(handed, 'slice')} ${handed === 1 ? 'was' : 'were'} queued and go on in the workers. ` +
          'Run the same command again to queue the rest: slices already queued are not queued twice.\n',
      );
      return 1;
    }
    if (!options.wait || (started.plan.state === 'queued' && handedOf(started.plan) === 0)) return 0;

    const report = await waitForOutcomes({ io, ledger, exportQueue, range, planId: started.plan.id, startedMs, selection, configFile: options.config });
    io.stdout.write(formatRunSummary(report));
    const alert = runAlert('backfill', `report-sync backfill of ${from === to ? from : `${from} to ${to}`}`, report);
    if (alert) await webhook?.send(alert);
    return exitCodeOf(report);
  } finally {
    await webhook?.close();
    await exportQueue?.close();
    redis.disconnect();
    await warehouse?.close();
  }
}

/** How often a line says how far the queueing of a long range has got. */
const QUEUEING_LINE_MS = 5_000;

/** A line on stderr every few seconds while a long range is being queued: never silent for long. */
function queueingProgress(io: CliIo, planned: number): (handed: number) => void {
  let lastLine = Date.now();
  return (handed) => {
    if (Date.now() - lastLine < QUEUEING_LINE_MS) return;
    lastLine = Date.now();
    io.stderr.write(`backfill: queueing: ${handed} of the range's ${planned} slices handed to Redis so far\n`);
  };
}

/** What a backfill started, as {@link describeStarted} says it. */
interface StartedSlices {
  readonly started: StartedBackfill;
  /** The slices of the range, before the selection. */
  readonly planned: number;
  readonly range: SliceRange;
  readonly selection: SliceSelection;
  readonly queueName: string;
}

/** Every slice a plan has handed to the queue: the outcomes `--wait` waits for. */
function handedOf(plan: BackfillPlan): number {
  const { queued, requeued, pending, recovered } = plan.handed;
  return queued + requeued + pending + recovered;
}

function describeStarted({ started, planned, range, selection, queueName }: StartedSlices): string {
  const { plan, resumed } = started;
  const { queued, requeued, pending, recovered } = plan.handed;
  const details = [`${queued} new`, `${requeued} again after their earlier job had finished`, `${pending} already waiting or running, left as they are`];
  if (recovered > 0) details.push(`${recovered} done since the plan began`);
  if (plan.state === 'queued' && !resumed) {
    const handed = handedOf(plan);
    if (selection.kind === 'missing') details.push(`${planned - handed} of the ${planned} in the range already loaded or no_data`);
    else if (selection.kind === 'failed') {
      const codes = selection.codes?.length ? ` with code ${selection.codes.join(' or ')}` : '';
      details.push(`${planned - handed} of the ${planned} in the range not failed${codes}`);
    } else details.push(`${planned} in the range`);
  }
  const lead = resumed ? `Resumed backfill plan ${plan.id} (begun ${plan.since}): queued ` : 'Queued ';
  const what = `${lead}${countOf(queued + requeued, 'slice')} from ${range.from} to ${range.to} on queue ${queueName}`;
  if (plan.state === 'queued') return `${what} (${details.join('; ')}).`;
  return (
    `${what} so far (${details.join('; ')}); the workers queue the rest of the range's ${planned} slices ` +
    `${plan.window} at a time as they finish them (backfill plan ${plan.id}, queue.backfillWindow).`
  );
}

interface WaitOptions {
  readonly io: CliIo;
  readonly ledger: Ledger;
  readonly exportQueue: ExportQueue;
  readonly range: SliceRange;
  /** The backfill's plan: its outcomes are those checked since it began, and it says how many it handed to the queue. */
  readonly planId: string;
  readonly startedMs: number;
  /** Which slices of the range were queued: the ones whose outcomes are waited for. */
  readonly selection: SliceSelection;
  readonly configFile: string | undefined;
}

/** How often a line says how the backfill is doing when there is no progress bar. */
const PROGRESS_LINE_MS = 10_000;

/** The shortest wait between two looks at the ledger while waiting for outcomes. */
const POLL_MS = 500;

/**
 * The wait before the next look at the ledger, from how long the last one took: twice that, so a
 * wait over millions of slices reads the ledger a third of the time at most.
 */
export function waitBeforeNextLookMs(lastLookMs: number): number {
  return Math.max(POLL_MS, 2 * lastLookMs);
}

/**
 * Follows the ledger (whichever workers write it) until the plan has queued its last slice and
 * every slice it handed to the queue has an outcome, the queue holds nothing more for them (their
 * jobs were lost), or Ctrl-C; then counts what happened.
 */
async function waitForOutcomes(options: WaitOptions): Promise<RunReport> {
  const { io, ledger, range, exportQueue } = options;
  let plan = await exportQueue.plans.get(options.planId);
  const since = plan?.since ?? new Date().toISOString();
  const selection = plan?.selection ?? options.selection;
  // Until the plan has queued its last slice, what it will hand is estimated from the ledger.
  const estimate = selection.kind === 'all' ? countSlices(range) : await countSelectedSlices(range, selection, ledger);
  const expectedOf = (current: BackfillPlan | undefined) => (current?.state === 'queued' ? handedOf(current) : Math.max(estimate, current === undefined ? 0 : handedOf(current)));
  let expected = expectedOf(plan);
  const bar = io.stderr.isTTY
    ? new SingleBar({
        stream: io.stderr,
        format: 'backfill [{bar}] {value}/{total} | loaded {loaded} | no data {noData} | failed {failed} | {rate}/s | eta {eta_formatted}',
        hideCursor: true,
        etaBuffer: 100,
      })
    : undefined;
  bar?.start(expected, 0, { loaded: 0, noData: 0, failed: 0, rate: '0' });
  let lastLine = Date.now();
  let lastProgress = { finished: 0, at: Date.now() };
  let interrupted = false;
  let lost = false;
  // Progress counts statuses only, and is asked again after at least twice as long as the last
  // question took: over millions of slices reading the ledger takes seconds, and a wait must not
  // keep the warehouse busy (nor a SQLite WAL from being checkpointed). The summary reads it all once.
  let progress: FinishedSince = { loaded: 0, noData: 0, failed: 0, finished: 0 };
  let askMs = 0;
  const askProgress = async () => {
    const askedAt = performance.now();
    progress = await ledger.finishedSince(range, since);
    plan = (await exportQueue.plans.get(options.planId)) ?? plan;
    askMs = performance.now() - askedAt;
  };
  try {
    for (;;) {
      await askProgress();
      if (expectedOf(plan) !== expected) {
        expected = expectedOf(plan);
        bar?.setTotal(expected);
      }
      const seconds = (performance.now() - options.startedMs) / 1000;
      bar?.update(Math.min(progress.finished, expected), {
        loaded: progress.loaded,
        noData: progress.noData,
        failed: progress.failed,
        rate: (progress.finished / Math.max(seconds, 0.001)).toFixed(1),
      });
      if (progress.finished > lastProgress.finished) lastProgress = { finished: progress.finished, at: Date.now() };
      if (plan?.state === 'queued' && progress.finished >= expected) break;
      if (options.io.signal?.aborted) {
        interrupted = true;
        break;
      }
      const unfinished = await options.exportQueue.unfinished();
      if (unfinished === 0) {
        // Nothing left in the queue, yet outcomes are missing: their jobs were lost (Redis restarted
        // without persistence, or flushed), or a job ended without a ledger row. Waiting longer would
        // wait forever. Read once more: a job may have finished between the two questions. A plan
        // still queueing keeps its next step in the queue, so it is never empty while it does.
        await askProgress();
        expected = expectedOf(plan);
        if (plan?.state === 'queued' && progress.finished >= expected) break;
        lost = true;
        break;
      }
      if (Date.now() - lastLine > PROGRESS_LINE_MS) {
        lastLine = Date.now();
        const stalled = Date.now() - lastProgress.at > PROGRESS_LINE_MS ? await stallReason(options.exportQueue, unfinished) : '';
        if (!bar || stalled) {
          const { finished, loaded, noData, failed } = progress;
          io.stderr.write(
            `${bar ? '\n' : ''}backfill: ${finished}/${expected} finished (loaded ${loaded}, no data ${noData}, failed ${failed}); ${unfinished} jobs still in the queue${stalled}\n`,
          );
        }
      }
      await sleep(waitBeforeNextLookMs(askMs), undefined, { signal: options.io.signal }).catch(() => undefined);
      if (options.io.signal?.aborted) {
        interrupted = true;
        break;
      }
    }
  } finally {
    bar?.stop();
  }

  const counts: OutcomeTally = tally(await ledger.outcomesSince(range, since));
  const failures = await ledger.failureSummary(range, { checkedSince: since });
  const warnings = counts.warned > 0 ? await ledger.warningSummary(range, { loadedSince: since }) : NO_WARNINGS;
  const notAttempted = Math.max(0, expected - counts.finished);
  const wholeRange = { from: range.from, to: range.to, portfolios: range.portfolios, reportTypes: range.reportTypes };
  const retry = notAttempted > 0 ? wholeRange : failures.span;
  const retryWith = retry ? retryCommand('backfill', retry, options.configFile) : undefined;
  let notAttemptedReason: string | undefined;
  if (lost && notAttempted > 0) {
    const named = await lostSlices(ledger, range, since, selection);
    notAttemptedReason =
      `${notAttempted} slices have no outcome and no job left in the queue: their jobs were lost (Redis restarted without persistence, or flushed) ` +
      `before a worker finished them${named.length > 0 ? `, e.g. ${named.map(describeSlice).join('; ')}` : ''}. ${retryWith} re-queues exactly the slices not loaded or no_data.`;
  } else if (interrupted && notAttempted > 0) {
    notAttemptedReason = `stopped waiting; the queued slices go on in the workers (follow them with report-sync status --from ${range.from} --to ${range.to}).`;
  }
  return {
    planned: expected,
    loaded: counts.loaded,
    unchanged: counts.unchanged,
    noData: counts.noData,
    noDataAgain: counts.noDataAgain,
    failed: counts.failed,
    notAttempted,
    notAttemptedReason,
    retries: counts.retries,
    warned: counts.warned,
    rowsWritten: counts.rowsWritten,
    bytes: 0,
    failures,
    warnings,
    retryCommand: retryWith,
    stoppedBy: undefined,
    interrupted: false,
    durationMs: Math.round(performance.now() - options.startedMs),
  };
}

/** Why nothing has moved for a while, when the queue can tell: no worker, or a queue paused by a 429. */
async function stallReason(exportQueue: ExportQueue, unfinished: number): Promise<string> {
  const workers = await exportQueue.queue.getWorkersCount();
  if (workers === 0) return `; no worker is connected to queue ${exportQueue.queue.name}: start one with report-sync worker`;
  return `; nothing finished for a while (${countOf(workers, 'worker')} connected, ${countOf(unfinished, 'job')} waiting, delayed or running)`;
}

/** The first few slices of the backfill that got no outcome since `since`, read a month at a time. */
async function lostSlices(ledger: Ledger, range: SliceRange, since: string, selection: SliceSelection): Promise<Slice[]> {
  const named: Slice[] = [];
  for (const window of rangeWindows(range)) {
    if (named.length === LOST_NAMED) break;
    const entries = new Map((await ledger.entries(window)).map((entry) => [sliceKey(sliceOfEntry(entry)), entry]));
    // The selection asked again: a lost slice still has the outcome that had it queued (missing,
    // or failed with its code), while slices it left out (already loaded, say) were never queued.
    for await (const slice of planSelectedSlices(window, selection, ledger)) {
      const entry = entries.get(sliceKey(slice));
      const hasOutcome = entry !== undefined && entry.checked_at >= since;
      if (!hasOutcome) named.push(slice);
      if (named.length === LOST_NAMED) break;
    }
  }
  return named;
}
