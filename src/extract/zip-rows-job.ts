import type { Slice } from '../slice.js';
import type { RowValues } from './row-builder.js';

/**
 * What {@link readZipRowsOnWorker} hands its worker thread (as `workerData`), and the messages
 * they exchange: the worker posts `rows` batches, then `end` or `error`; the reader answers each
 * batch with one message (any value), a credit for one more batch ahead.
 */
export interface ZipRowsJob {
  /** The spooled body's file, or the bytes of one held in memory (copied to the worker). */
  readonly zip: { readonly path: string } | { readonly buffer: Buffer };
  readonly fileName: string;
  readonly maxUncompressedBytes: number;
  readonly slice: Slice;
  /** Rows per message. */
  readonly batchRows: number;
  /** Batches the worker may post before the reader has taken them: the bound on memory in between. */
  readonly batchesAhead: number;
}

/** One message of the worker to the reader. */
export type ZipRowsMessage =
  /**
   * Rows, each its values in `rowColumns` order. An array of rows, not one flat array of values:
   * a flat array of 2,000 rows would exceed V8's large-object size (128 KiB), which only a full
   * collection frees, and such arrays piled up to 80 MB of RSS over a 1,000,000-row load.
   */
  | { readonly kind: 'rows'; readonly rows: RowValues[] }
  | { readonly kind: 'end' }
  /** A failure of the file (or a surprise), described so the reader can throw the same class and code. */
  | { readonly kind: 'error'; readonly name: string; readonly code: string | undefined; readonly message: string };
