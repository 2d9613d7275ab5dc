import type { Slice } from '../slice.js';

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
  /** `rowCount` rows' values, one after the other, each row in `rowColumns` order (`width` values). */
  | { readonly kind: 'rows'; readonly values: (string | number | null)[]; readonly width: number; readonly rowCount: number }
  | { readonly kind: 'end' }
  /** A failure of the file (or a surprise), described so the reader can throw the same class and code. */
  | { readonly kind: 'error'; readonly name: string; readonly code: string | undefined; readonly message: string };
