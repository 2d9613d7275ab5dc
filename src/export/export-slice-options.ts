/** How one slice is to be exported. */
export interface ExportSliceOptions {
  /** Load the file even if it is the one already loaded (`run --force`, `backfill --force`). */
  readonly force?: boolean;
}
