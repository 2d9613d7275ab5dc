/*
 * The worker thread of readZipRowsOnWorker: inflates the ZIP's CSV, parses and types its rows
 * exactly as the single-threaded path does (readZipCsvRecords, createRowValuesBuilder), and posts
 * them in batches. Every check (size, CRC-32, UTF-8, decimals, dates, key columns) runs here; a
 * failure is posted as an `error` message, and the reader throws it inside the slice's
 * transaction, which then rolls back.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { REPORT_REGISTRY } from '../reports/report-registry.js';
import { createRowValuesBuilder, type RowValues } from './row-builder.js';
import type { ZipRowsJob, ZipRowsMessage } from './zip-rows-job.js';
import { readZipCsvRecords } from './zip-csv-records.js';

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

try {
  const build = createRowValuesBuilder(REPORT_REGISTRY[job.slice.reportType], job.slice, job.fileName);
  let rows: RowValues[] = [];
  let ordinal = 0;
  for await (const record of readZipCsvRecords(job.zip, { fileName: job.fileName, maxUncompressedBytes: job.maxUncompressedBytes })) {
    ordinal += 1;
    rows.push(build(record, ordinal));
    if (rows.length === job.batchRows) {
      post({ kind: 'rows', rows });
      rows = [];
      credits -= 1;
      // Backpressure: never more than `batchesAhead` batches the reader has not taken.
      if (credits <= 0) await new Promise<void>((resolve) => (wake = resolve));
    }
  }
  if (rows.length > 0) post({ kind: 'rows', rows });
  post({ kind: 'end' });
} catch (error) {
  const err = error as Error & { code?: unknown };
  post({ kind: 'error', name: err.name ?? 'Error', code: typeof err.code === 'string' ? err.code : undefined, message: err.message ?? String(error) });
}
