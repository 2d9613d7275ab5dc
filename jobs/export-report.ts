import type { Settings } from '../src/config/settings-schema.js';
import { SyncError, toSyncError } from '../src/errors.js';
import { openExportRecords } from '../src/extract/open-export-records.js';
import type { SourceRecord } from '../src/extract/source-record.js';
import type { ExportClient } from '../src/gateway/export-client.js';
import type { Logger } from '../src/logger.js';
import type { SyncMetrics } from '../src/metrics/sync-metrics.js';
import { REPORT_REGISTRY } from '../src/reports/report-registry.js';
import { createRowValuesBuilder, type RowValues } from '../src/extract/row-builder.js';
import type { ExportFormat } from '../src/reports/report-types.js';
import type { SliceAttempt, SliceOutcome } from '../src/slice-outcome.js';
import { describeSlice, sliceLogFields, type Slice } from '../src/slice.js';
import type { SliceLoader } from '../src/warehouse/slice-loader.js';

/** What the export job needs; one set per process, shared by all its jobs. */
export interface ExportReportDeps {
  readonly client: ExportClient;
  readonly loader: SliceLoader;
  readonly settings: Pick<Settings, 'formats' | 'defaultFormat' | 'limits' | 'warehouse'>;
  readonly logger: Logger;
  /** Counts outcomes and retries, when the process exposes metrics. */
  readonly metrics?: SyncMetrics;
}

/** How one slice is to be exported. */
export interface ExportReportOptions {
  /** Load the file even if it is the one already loaded (`run --force`, `backfill --force`). */
  readonly force?: boolean;
}

/**
 * The export job: one slice end to end (token, download, parse, load), the same function for the
 * in-process runner and the queue worker. It never throws: it returns the attempt's outcome, and
 * writes the ledger whenever that outcome is final.
 */
export async function exportReport(slice: Slice, attempt: SliceAttempt, deps: ExportReportDeps, options: ExportReportOptions = {}): Promise<SliceOutcome> {
  const outcome = await attemptExport(slice, attempt, deps, options);
  if (outcome.final) deps.metrics?.sliceFinished(outcome);
  else if (outcome.status === 'failed' && outcome.error.code !== 'INTERRUPTED') deps.metrics?.sliceRetried(outcome.error.code);
  return outcome;
}

async function attemptExport(slice: Slice, attempt: SliceAttempt, deps: ExportReportDeps, options: ExportReportOptions): Promise<SliceOutcome> {
  const startedAt = performance.now();
  const log = deps.logger.child({ ...sliceLogFields(slice), attempt: attempt.number });
  const elapsed = () => Math.round(performance.now() - startedAt);
  try {
    const outcome = await fetchAndLoad(slice, attempt, deps, elapsed, log, options);
    if (outcome.status === 'loaded') {
      log.info(
        { status: 'loaded', rows: outcome.rowCount, bytes: outcome.bytes, format: outcome.format, unchanged: outcome.unchanged, durationMs: outcome.durationMs, attempts: attempt.number },
        'slice loaded',
      );
    } else {
      log.info({ status: 'no_data', rows: 0, bytes: 0, durationMs: outcome.durationMs, attempts: attempt.number }, 'slice has no data');
    }
    return outcome;
  } catch (thrown) {
    const error = toSyncError(thrown);
    if (error.code === 'INTERRUPTED') {
      // A shutdown cut a wait short: nothing was written, and the ledger keeps the slice as it was.
      log.info({ status: 'interrupted', durationMs: elapsed() }, 'slice interrupted by the shutdown; left as it was');
      return { status: 'failed', slice, attempt: attempt.number, durationMs: elapsed(), error, final: false };
    }
    const final = !error.retryable || attempt.isLast;
    if (!final) {
      log.warn({ status: 'retrying', code: error.code, error: error.message, durationMs: elapsed() }, 'attempt failed, will retry');
      return { status: 'failed', slice, attempt: attempt.number, durationMs: elapsed(), error, final };
    }
    const recorded = await recordFailure(slice, error, attempt, deps, elapsed());
    log.error(
      { status: 'failed', code: recorded.code, error: recorded.message, rows: 0, durationMs: elapsed(), attempts: attempt.number },
      'slice failed',
    );
    return { status: 'failed', slice, attempt: attempt.number, durationMs: elapsed(), error: recorded, final };
  }
}

async function fetchAndLoad(
  slice: Slice,
  attempt: SliceAttempt,
  deps: ExportReportDeps,
  elapsed: () => number,
  log: Logger,
  options: ExportReportOptions,
): Promise<SliceOutcome> {
  const { client, loader, settings } = deps;
  const definition = REPORT_REGISTRY[slice.reportType];
  const requested: ExportFormat = settings.formats[slice.reportType] ?? settings.defaultFormat;
  const download = await client.download(slice, requested);

  if (download.kind === 'no_data') {
    const unchanged = await recordNoData(slice, requested, attempt, deps, elapsed());
    return { status: 'no_data', final: true, slice, attempt: attempt.number, durationMs: elapsed(), unchanged };
  }

  const { body } = download;
  try {
    const fileName = download.fileName ?? `${slice.reportDate}_${slice.portfolioId}_${slice.reportType}.${requested === 'csv' ? 'zip' : 'json'}`;
    const content = await openExportRecords(body, {
      fileName,
      contentType: download.contentType,
      maxUncompressedBytes: settings.limits.maxUncompressedBytes,
      maxJsonDepth: settings.limits.maxJsonDepth,
    });
    if (content.kind === 'blank') {
      const unchanged = await recordNoData(slice, requested, attempt, deps, elapsed());
      return { status: 'no_data', final: true, slice, attempt: attempt.number, durationMs: elapsed(), unchanged };
    }

    const facts = { format: content.format, fileName: download.fileName, bytes: body.bytes, sha256: body.sha256 };
    const rows = toRows(content.records, createRowValuesBuilder(definition, slice, fileName));
    const load = await loader.loadExport(slice, definition, rows, facts, attempt.number, { force: options.force, durationMs: elapsed() });
    if (load.replacedMismatch) {
      log.warn(
        { heldRows: load.replacedMismatch.heldRows, ledgerRows: load.replacedMismatch.ledgerRows },
        'the warehouse no longer holds the rows the ledger records for this unchanged file (deleted, or an older backup restored): loading it again',
      );
    }
    return {
      status: 'loaded',
      final: true,
      slice,
      attempt: attempt.number,
      durationMs: elapsed(),
      rowCount: load.rowCount,
      bytes: body.bytes,
      format: content.format,
      fileName: download.fileName,
      unchanged: load.unchanged,
    };
  } finally {
    await body.dispose();
  }
}

async function* toRows(records: AsyncIterable<SourceRecord>, build: ReturnType<typeof createRowValuesBuilder>): AsyncGenerator<RowValues> {
  let ordinal = 0;
  for await (const record of records) {
    ordinal += 1;
    yield build(record, ordinal);
  }
}

/**
 * Records `no_data` (true when the slice had no data already), unless the warehouse holds rows of the slice: an empty answer never deletes
 * them on its own (a glitch upstream would wipe loaded data), unless
 * `warehouse.acceptEmptyRestatements` says such restatements are to be believed.
 */
async function recordNoData(slice: Slice, format: ExportFormat, attempt: SliceAttempt, deps: ExportReportDeps, durationMs: number): Promise<boolean> {
  const record = await deps.loader.recordEmptyAnswer(slice, REPORT_REGISTRY[slice.reportType], format, attempt.number, {
    acceptRestatement: deps.settings.warehouse.acceptEmptyRestatements,
    durationMs,
  });
  if (record.kind === 'refused') {
    const previous = record.previous;
    throw new SyncError(
      'EMPTY_RESTATEMENT',
      `the service answered 200 with no data for ${describeSlice(slice)}, which the warehouse holds ${previous.row_count} rows of ` +
        `(${previous.file_name ?? 'loaded'} at ${previous.updated_at}); the rows are kept. If the service really withdrew them, ` +
        'set warehouse.acceptEmptyRestatements to true and run the slice again',
    );
  }
  return record.kind === 'unchanged';
}

/**
 * Writes the failure to the ledger. If even that fails (the warehouse is down or locked), the
 * ledger cannot say so: the error reported (console summary, worker log) then says that the
 * failure is not in the ledger and why, so the operator knows to re-run the slice.
 */
async function recordFailure(slice: Slice, error: SyncError, attempt: SliceAttempt, deps: ExportReportDeps, durationMs: number): Promise<SyncError> {
  try {
    await deps.loader.recordFailure(slice, `${error.code}: ${error.message}`, attempt.number, durationMs);
    return error;
  } catch (ledgerError) {
    const warehouseError = toSyncError(ledgerError);
    deps.logger.error({ ...sliceLogFields(slice), code: warehouseError.code, error: warehouseError.message }, 'could not record the failure in the ledger');
    return new SyncError(
      error.code,
      `${error.message}; this failure is NOT in the ledger (${warehouseError.message}), so status shows the slice as it was before: re-run it once the warehouse is available`,
      { cause: error, retryAfterMs: error.retryAfterMs },
    );
  }
}
