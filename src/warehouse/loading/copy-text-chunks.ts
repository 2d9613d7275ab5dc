import { CopyTextRows } from '../engine/copy-text-rows.js';
import type { SliceRows } from '../engine/row-writer.js';
import { copyTextRow } from './copy-text-row.js';
import { MAX_BATCH_CHARS } from './max-batch-chars.js';

/** How {@link copyTextChunks} cuts a slice's rows. */
export interface CopyTextChunksOptions {
  /** Rows per chunk (fewer when they are long, see {@link MAX_BATCH_CHARS}). */
  readonly batchRows: number;
  /** The end of every line (the load's `copyLineEnd`). */
  readonly lineEnd: string;
  /** Counts the rows as they are handed on, so the writer can tell how many it sent. */
  readonly tally: { rows: number };
}

/**
 * A slice's rows as chunks of whole lines of COPY text (see {@link copyTextRow}): typed rows are
 * written here, rows a worker thread wrote already ({@link CopyTextRows}) pass through in its
 * batches. Both bulk paths read this: Postgres's `COPY … FROM STDIN` and MySQL's `LOAD DATA LOCAL
 * INFILE`, whose default text format is the same. Nothing is read before the first chunk is asked for.
 */
export async function* copyTextChunks(rows: SliceRows, options: CopyTextChunksOptions): AsyncGenerator<string> {
  const { batchRows, lineEnd, tally } = options;
  if (rows instanceof CopyTextRows) {
    for await (const batch of rows.batches(lineEnd)) {
      tally.rows += batch.rows;
      yield batch.text;
    }
    return;
  }
  let chunk = '';
  let inChunk = 0;
  for await (const row of rows) {
    chunk += copyTextRow(row, lineEnd);
    tally.rows += 1;
    inChunk += 1;
    if (inChunk === batchRows || chunk.length >= MAX_BATCH_CHARS) {
      yield chunk;
      chunk = '';
      inChunk = 0;
    }
  }
  if (chunk !== '') yield chunk;
}
