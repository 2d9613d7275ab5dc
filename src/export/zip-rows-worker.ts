/*
 * The worker thread of readZipRowsOnWorker: reads and types the ZIP's rows exactly as the
 * single-threaded path does, tallies the checks, and posts batches (typed or as COPY text). A failed
 * check is posted as an `error` message; the reader throws it inside the slice's transaction.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SliceCheckTally } from '../quality/slice-check-tally.js';
import { REPORT_REGISTRY } from '../reports/report-registry.js';
import { copyTextRow } from '../warehouse/loading/copy-text-row.js';
import { MAX_BATCH_CHARS } from '../warehouse/loading/max-batch-chars.js';
import { createRowValuesBuilder, type RowValues } from '../extract/row-builder.js';
import type { ZipRowsJob, ZipRowsMessage } from './zip-rows-job.js';
import { readZipCsvRecords } from '../extract/zip-csv-records.js';

const port = parentPort;
if (!port) throw new Error('zip-rows-worker runs only as a worker thread (see readZipRowsOnWorker)');
const job = workerData as ZipRowsJob;

let credits = job.batchesAhead;
let wake: (() => void) | undefined;
port.on('message', () => {
  credits += 1;
  wake?.();
  wake = undefined;
});

const post = (message: ZipRowsMessage) => port.postMessage(message);
/**
 * COPY text goes in messages of at most about this many characters (96 KiB even as a two-byte
 * string), under V8's large-object size (128 KiB): bigger messages made a big load into Postgres
 * markedly slower. Figures in docs/performance.md.
 */
const TEXT_CHARS = 48 * 1024;

try {
  const definition = REPORT_REGISTRY[job.slice.reportType];
  const build = createRowValuesBuilder(definition, job.slice, job.fileName, { decimals: job.decimals });
  const tally = job.checks ? new SliceCheckTally(definition, job.slice, job.checks) : undefined;
  const lineEnd = job.form.kind === 'copy-text' ? job.form.lineEnd : undefined;
  let rows: RowValues[] = [];
  let text = '';
  /** Characters of text in `rows`: long rows end a batch early (see MAX_BATCH_CHARS). */
  let rowsChars = 0;
  let inBatch = 0;
  const flush = () => {
    if (lineEnd === undefined) {
      post({ kind: 'rows', rows });
      rows = [];
      rowsChars = 0;
    } else {
      post({ kind: 'copy-text', text, rows: inBatch });
      text = '';
    }
    inBatch = 0;
  };
  let ordinal = 0;
  for await (const record of readZipCsvRecords(job.zip, { fileName: job.fileName, maxUncompressedBytes: job.maxUncompressedBytes, maxRecordBytes: job.maxRecordBytes })) {
    ordinal += 1;
    const row = build(record, ordinal);
    tally?.observe(row);
    if (lineEnd === undefined) {
      rows.push(row);
      for (let i = 0; i < row.length; i += 1) {
        const value = row[i];
        if (typeof value === 'string') rowsChars += value.length;
      }
    } else text += copyTextRow(row, lineEnd);
    inBatch += 1;
    if (inBatch === job.batchRows || text.length >= TEXT_CHARS || rowsChars >= MAX_BATCH_CHARS) {
      flush();
      credits -= 1;
      // Backpressure: never more than `batchesAhead` batches the reader has not taken.
      if (credits <= 0) await new Promise<void>((resolve) => (wake = resolve));
    }
  }
  if (inBatch > 0) flush();
  post({ kind: 'end', tallied: tally?.tallied() });
} catch (error) {
  const err = error as Error & { code?: unknown };
  post({ kind: 'error', name: err.name ?? 'Error', code: typeof err.code === 'string' ? err.code : undefined, message: err.message ?? String(error) });
}
