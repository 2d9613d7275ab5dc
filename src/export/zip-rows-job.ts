import type { CheckSettings, SliceCheckTallied } from '../quality/slice-check-tally.js';
import type { Slice } from '../slice/slice.js';
import type { DecimalCapacity } from '../reports/decimal-capacity.js';
import type { RowValues } from '../extract/row-builder.js';

/**
 * What {@link readZipRowsOnWorker} hands its worker thread (as `workerData`), and the messages
 * they exchange: the worker posts `rows` (or `copy-text`) batches, then `end` or `error`; the
 * reader answers each batch with one message (any value), a credit for one more batch ahead.
 */
export interface ZipRowsJob {
  /** The spooled body's file, or the bytes of one held in memory (copied to the worker). */
  readonly zip: { readonly path: string } | { readonly buffer: Buffer };
  readonly fileName: string;
  readonly maxUncompressedBytes: number;
  /** `limits.maxRecordBytes`; the default when not given. */
  readonly maxRecordBytes?: number;
  readonly slice: Slice;
  /** What the warehouse's decimal columns keep exactly; Postgres NUMERIC's when not given. */
  readonly decimals?: DecimalCapacity;
  /** Rows per message (COPY text also ends a message at about 48 K characters). */
  readonly batchRows: number;
  /** Batches the worker may post before the reader has taken them: the bound on memory in between. */
  readonly batchesAhead: number;
  /**
   * How the rows travel: as typed values, or (for Postgres) as COPY text lines each ended by
   * `lineEnd` (see `copyLineEnd`), so the reading thread only sends bytes.
   */
  readonly form: { readonly kind: 'values' } | { readonly kind: 'copy-text'; readonly lineEnd: string };
  /** The data-quality checks to tally in the worker (see `SliceCheckTally`), if any; what it saw comes with `end`. */
  readonly checks?: CheckSettings;
}

/** One message of the worker to the reader. */
export type ZipRowsMessage =
  /**
   * Rows, each its values in `rowColumns` order. An array of rows, not one flat array of values:
   * a flat array of a batch would pass V8's large-object size (128 KiB), which only a full
   * collection frees, and such arrays pile up in RSS over a long load.
   */
  | { readonly kind: 'rows'; readonly rows: RowValues[] }
  /**
   * Rows as COPY text. A string, not UTF-8 bytes: copying a string between threads is a memory
   * copy, and encoding it is left to the reading thread, which has little else to do.
   */
  | { readonly kind: 'copy-text'; readonly text: string; readonly rows: number }
  | { readonly kind: 'end'; readonly tallied: SliceCheckTallied | undefined }
  /** A failure of the file (or a surprise), described so the reader can throw the same class and code. */
  | { readonly kind: 'error'; readonly name: string; readonly code: string | undefined; readonly message: string };
