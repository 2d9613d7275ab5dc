import type { ExportContent } from '../extract/open-export-records.js';
import { readZipCopyTextOnWorker, readZipRowsOnWorker } from './read-zip-rows-on-worker.js';
import { createRowValuesBuilder } from '../extract/row-builder.js';
import type { SliceCheckTally } from '../quality/slice-check-tally.js';
import type { DecimalCapacity } from '../reports/decimal-capacity.js';
import type { ReportDefinition } from '../reports/report-definition.js';
import type { Slice } from '../slice/slice.js';
import type { SliceRows } from '../warehouse/engine/row-writer.js';
import { numberedRows } from './numbered-rows.js';

/** How {@link exportRows} reads a file. */
export interface ExportRowsOptions {
  readonly fileName: string;
  /** The body's size in bytes. */
  readonly bytes: number;
  readonly maxUncompressedBytes: number;
  /** `limits.maxRecordBytes`. */
  readonly maxRecordBytes: number;
  /** A ZIP body of at least this many bytes is read on a worker thread (`limits.threadedParseBytes`). */
  readonly threadedParseBytes: number;
  /** The slice's data-quality tally: every row is tallied by the thread that types it. */
  readonly checks?: SliceCheckTally;
  /** The warehouse's row writer takes COPY text (see `RowWriter.takesCopyText`): a worker thread then writes it too. */
  readonly copyText: boolean;
  /** What the warehouse's decimal columns keep exactly (see `RowWriter.decimals`). */
  readonly decimals: DecimalCapacity;
}

/**
 * The slice's rows from its file, typed and numbered: a big ZIP on a worker thread (as rows or as
 * COPY text), anything else on this thread; `onWorker` says which. All give the same rows and
 * errors; nothing starts until the rows are read.
 */
export function exportRows(
  content: Extract<ExportContent, { kind: 'records' }>,
  slice: Slice,
  definition: ReportDefinition,
  options: ExportRowsOptions,
): { readonly rows: SliceRows; readonly onWorker: boolean } {
  const { fileName } = options;
  const { checks } = options;
  if (content.zip && options.bytes >= options.threadedParseBytes) {
    const job = {
      zip: content.zip,
      fileName,
      maxUncompressedBytes: options.maxUncompressedBytes,
      maxRecordBytes: options.maxRecordBytes,
      slice,
      checks,
      decimals: options.decimals,
    };
    return { rows: options.copyText ? readZipCopyTextOnWorker(job) : readZipRowsOnWorker(job), onWorker: true };
  }
  return { rows: numberedRows(content.records, createRowValuesBuilder(definition, slice, fileName, { decimals: options.decimals }), checks), onWorker: false };
}
