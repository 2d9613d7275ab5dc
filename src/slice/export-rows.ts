import type { ExportContent } from '../extract/open-export-records.js';
import { readZipRowsOnWorker } from '../extract/read-zip-rows-on-worker.js';
import { createRowValuesBuilder, type RowValues } from '../extract/row-builder.js';
import type { SliceCheckTally } from '../quality/slice-check-tally.js';
import type { ReportDefinition } from '../reports/report-definition.js';
import type { Slice } from '../slice.js';
import { numberedRows } from './numbered-rows.js';
import { observedRows } from './observed-rows.js';

/** How {@link exportRows} reads a file. */
export interface ExportRowsOptions {
  readonly fileName: string;
  /** The body's size in bytes. */
  readonly bytes: number;
  readonly maxUncompressedBytes: number;
  /** A ZIP body of at least this many bytes is read on a worker thread (`limits.threadedParseBytes`). */
  readonly threadedParseBytes: number;
  /** The slice's data-quality tally, shown every row on this thread whichever thread typed it. */
  readonly checks?: SliceCheckTally;
}

/**
 * The slice's rows from its file, typed and numbered: a big ZIP on a worker thread
 * ({@link readZipRowsOnWorker}), anything else on this thread. Both yield the same rows and fail
 * with the same errors; nothing starts until the rows are read. `onWorker` says which.
 */
export function exportRows(
  content: Extract<ExportContent, { kind: 'records' }>,
  slice: Slice,
  definition: ReportDefinition,
  options: ExportRowsOptions,
): { readonly rows: AsyncIterable<RowValues>; readonly onWorker: boolean } {
  const { fileName } = options;
  const { checks } = options;
  if (content.zip && options.bytes >= options.threadedParseBytes) {
    const rows = readZipRowsOnWorker({ zip: content.zip, fileName, maxUncompressedBytes: options.maxUncompressedBytes, slice });
    return { rows: checks ? observedRows(rows, checks) : rows, onWorker: true };
  }
  return { rows: numberedRows(content.records, createRowValuesBuilder(definition, slice, fileName), checks), onWorker: false };
}
