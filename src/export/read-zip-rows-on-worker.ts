import { startModuleWorker } from '../runtime/start-module-worker.js';
import { ExportError, FileFormatError, type SyncErrorCode } from '../errors/sync-error.js';
import type { SliceCheckTally } from '../quality/slice-check-tally.js';
import { CopyTextRows } from '../warehouse/engine/copy-text-rows.js';
import type { RowValues } from '../extract/row-builder.js';
import type { ZipRowsJob, ZipRowsMessage } from './zip-rows-job.js';

/** What {@link readZipRowsOnWorker} and {@link readZipCopyTextOnWorker} read: the job of their worker thread. */
export type ZipRowsOnWorkerOptions = Omit<ZipRowsJob, 'batchRows' | 'batchesAhead' | 'form' | 'checks'> &
  Partial<Pick<ZipRowsJob, 'batchRows' | 'batchesAhead'>> & {
    /** The slice's data-quality tally: tallied on the worker, and what it saw adopted here when the rows end. */
    readonly checks?: SliceCheckTally;
  };

/**
 * A ZIP export's typed rows as `numberedRows(readZipCsvRecords(…))` yields them, produced on a worker
 * thread while this one writes; at most `batchesAhead` batches wait, so memory stays bounded. Worker
 * failures are rethrown with the same class, code and message; the worker always ends with the rows.
 */
export async function* readZipRowsOnWorker(options: ZipRowsOnWorkerOptions): AsyncGenerator<RowValues> {
  for await (const message of workerBatches(options, { kind: 'values' })) if (message.kind === 'rows') yield* message.rows;
}

/**
 * {@link readZipRowsOnWorker} for a Postgres COPY or a MySQL LOAD DATA: the worker also writes the rows as COPY text,
 * each line ended by the load's `lineEnd`; this thread, which only sends them, is left free for
 * the database's own work on the other core.
 */
export function readZipCopyTextOnWorker(options: ZipRowsOnWorkerOptions): CopyTextRows {
  return new CopyTextRows(async function* (lineEnd) {
    for await (const message of workerBatches(options, { kind: 'copy-text', lineEnd })) if (message.kind === 'copy-text') yield message;
  });
}

/** The worker's batches, in order; its failure thrown; the tally's findings adopted at the end. */
async function* workerBatches(options: ZipRowsOnWorkerOptions, form: ZipRowsJob['form']): AsyncGenerator<Extract<ZipRowsMessage, { kind: 'rows' | 'copy-text' }>> {
  const { checks, ...rest } = options;
  // A message of typed rows costs both threads a fixed time on top of its rows': few big batches,
  // not many small ones. COPY text is one string a message, cheap to pass: its messages are kept
  // small instead (see zip-rows-worker). Figures in docs/performance.md.
  const job: ZipRowsJob = { batchRows: 2_000, batchesAhead: 4, ...rest, form, checks: checks?.settings };
  const worker = startModuleWorker(import.meta.url, 'zip-rows-worker', { workerData: job, resourceLimits: WORKER_LIMITS });
  const inbox: ZipRowsMessage[] = [];
  let failure: Error | undefined;
  let exitCode: number | undefined;
  let notify: (() => void) | undefined;
  const wakeUp = () => {
    notify?.();
    notify = undefined;
  };
  worker.on('message', (message: ZipRowsMessage) => {
    inbox.push(message);
    wakeUp();
  });
  worker.on('error', (error: Error) => {
    failure = error;
    wakeUp();
  });
  worker.on('exit', (code: number) => {
    exitCode = code;
    wakeUp();
  });
  try {
    for (;;) {
      let message = inbox.shift();
      while (message === undefined) {
        // Not the file's fault (the file's own trouble arrives as an `error` message): a bug or the
        // process's limits, kept as a surprise rather than blamed on the export.
        if (failure) throw new Error(`${job.fileName}: the worker thread reading it failed: ${failure.message}`, { cause: failure });
        if (exitCode !== undefined) throw new Error(`${job.fileName}: the worker thread reading it stopped (exit code ${exitCode}) before the end of the file`);
        await new Promise<void>((resolve) => (notify = resolve));
        message = inbox.shift();
      }
      if (message.kind === 'end') {
        if (checks && message.tallied) checks.adopt(message.tallied);
        return;
      }
      if (message.kind === 'error') throw rebuiltError(message);
      // The credit goes back at once, so the worker parses the next batch while this one is written.
      worker.postMessage(0);
      yield message;
    }
  } finally {
    await worker.terminate();
  }
}

/**
 * The worker's young generation, paid in RSS on top of the main thread's. The rows waiting
 * between the threads live through scavenges: too small and the worker spends its time in GC; V8's
 * default (larger) takes the process near its memory budget. Figures in docs/performance.md.
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 16 };

/** The worker's error as the class the single-threaded path throws, so classification and messages match. */
function rebuiltError(message: Extract<ZipRowsMessage, { kind: 'error' }>): Error {
  if (message.name === 'FileFormatError') return new FileFormatError(message.message);
  if (message.name === 'ExportError' && message.code) return new ExportError(message.code as SyncErrorCode, message.message);
  // Anything else (a read error of the spool file, a bug) keeps its name and code for classifyError.
  const error = Object.assign(new Error(message.message), { code: message.code });
  error.name = message.name;
  return error;
}
