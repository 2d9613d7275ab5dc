import { openExportRecords } from '../extract/open-export-records.js';
import { REPORT_REGISTRY } from '../reports/report-registry.js';
import type { ExportFormat } from '../reports/report-types.js';
import { SliceCheckTally } from '../quality/slice-check-tally.js';
import type { SliceOutcome } from '../outcomes/slice-outcome.js';
import type { ExportSliceOptions } from './export-slice-options.js';
import { exportRows } from './export-rows.js';
import { recordEmptyAnswer } from './record-empty-answer.js';
import type { SliceAttemptRun } from './slice-attempt-run.js';

/**
 * One attempt's work: download the slice's file, parse it as it streams in, and load it (or record
 * no data); whether the file is the one already loaded, or no data again, the loader decides
 * inside the slice's transaction. Throws what went wrong; the downloaded body is always disposed of.
 */
export async function fetchAndLoad(run: SliceAttemptRun, options: ExportSliceOptions): Promise<SliceOutcome> {
  const { slice, attempt, deps, elapsed, log } = run;
  const { client, loader, settings } = deps;
  const definition = REPORT_REGISTRY[slice.reportType];
  const requested: ExportFormat = settings.formats[slice.reportType] ?? settings.defaultFormat;
  const download = await client.download(slice, requested);

  if (download.kind === 'no_data') {
    const unchanged = await recordEmptyAnswer(run, requested);
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
      maxRecordBytes: settings.limits.maxRecordBytes,
    });
    if (content.kind === 'blank') {
      const unchanged = await recordEmptyAnswer(run, requested);
      return { status: 'no_data', final: true, slice, attempt: attempt.number, durationMs: elapsed(), unchanged };
    }

    const facts = { format: content.format, fileName: download.fileName, bytes: body.bytes, sha256: body.sha256 };
    const checks = new SliceCheckTally(definition, slice, settings.checks);
    const { rows, onWorker } = exportRows(content, slice, definition, {
      fileName,
      bytes: body.bytes,
      maxUncompressedBytes: settings.limits.maxUncompressedBytes,
      maxRecordBytes: settings.limits.maxRecordBytes,
      threadedParseBytes: settings.limits.threadedParseBytes,
      checks,
      copyText: loader.takesCopyText,
      decimals: loader.decimals,
    });
    if (onWorker) log.debug({ bytes: body.bytes }, 'reading the file on a worker thread while its rows are written');
    const load = await loader.loadExport({
      slice,
      definition,
      rows,
      file: facts,
      attempts: attempt.number,
      force: options.force,
      durationMs: elapsed(),
      checks,
      // What the warehouse's engine decides the size of the slice's transaction from.
      source: { heldInMemory: body.inMemory() !== undefined, compressed: content.zip !== undefined },
    });
    const checkWarnings = (load.checks ?? []).filter((result) => result.outcome === 'warn');
    if (checkWarnings.length > 0) {
      log.warn({ checks: checkWarnings.map((result) => result.message) }, 'the file misses data-quality checks set to warn; loaded, with the warnings recorded in slice_checks');
    }
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
      checkWarnings,
    };
  } finally {
    await body.dispose();
  }
}
