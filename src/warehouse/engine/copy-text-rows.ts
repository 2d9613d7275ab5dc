/**
 * A slice's rows already written as COPY text (see `copyTextRow`; MySQL's LOAD DATA reads it too), in batches of whole
 * lines, by the thread that typed them (see `readZipCopyTextOnWorker`): the writing thread only
 * sends them. Only a {@link RowWriter} whose `takesCopyText` is set is handed these.
 */
export class CopyTextRows {
  readonly #open: (lineEnd: string) => AsyncIterable<CopyTextBatch>;

  /** `open` starts the rows, every line ended by `lineEnd` (the load's `copyLineEnd`); it is called once. */
  constructor(open: (lineEnd: string) => AsyncIterable<CopyTextBatch>) {
    this.#open = open;
  }

  /** The batches, each line ended by `lineEnd`; nothing starts before this is called. */
  batches(lineEnd: string): AsyncIterable<CopyTextBatch> {
    return this.#open(lineEnd);
  }
}

/** Whole lines of COPY text, and how many rows they hold. */
export interface CopyTextBatch {
  readonly text: string;
  readonly rows: number;
}
