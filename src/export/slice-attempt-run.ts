import type { Logger } from '../logging/logger.js';
import type { SliceAttempt } from '../outcomes/slice-outcome.js';
import type { Slice } from '../slice/slice.js';
import type { ExportSliceDeps } from './export-slice-deps.js';

/** One attempt at one slice as its steps (download, load, record) share it. */
export interface SliceAttemptRun {
  readonly slice: Slice;
  readonly attempt: SliceAttempt;
  readonly deps: ExportSliceDeps;
  /** The slice's own logger. */
  readonly log: Logger;
  /** Milliseconds since the attempt started. */
  readonly elapsed: () => number;
}
