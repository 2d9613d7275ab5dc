import type { SyncError } from '../errors/sync-error.js';
import type { ExportFormat } from '../reports/report-types.js';
import type { Slice } from '../slice/slice.js';
import type { CheckWarning } from './warning-groups.js';

interface OutcomeBase {
  readonly slice: Slice;
  /** The attempt this outcome came from (1-based). */
  readonly attempt: number;
  readonly durationMs: number;
}

/** What one attempt at a slice came to. Only `final` outcomes are in the ledger. */
export type SliceOutcome =
  | (OutcomeBase & {
      readonly status: 'loaded';
      readonly final: true;
      readonly rowCount: number;
      readonly bytes: number;
      readonly format: ExportFormat;
      readonly fileName: string | null;
      /** The file was the one already loaded: nothing was rewritten. */
      readonly unchanged: boolean;
      /** The results of the data-quality checks set to `warn` that the file missed (it was loaded anyway); none when unchanged. */
      readonly checkWarnings: readonly CheckWarning[];
    })
  | (OutcomeBase & {
      readonly status: 'no_data';
      readonly final: true;
      /** The slice was `no_data` already: nothing changed. */
      readonly unchanged: boolean;
    })
  | (OutcomeBase & {
      readonly status: 'failed';
      readonly error: SyncError;
      /** False when the trouble is retryable and attempts remain: the ledger was not written. */
      readonly final: boolean;
    });

/** Which attempt this is, as the runner (in-process or BullMQ) counts them. */
export interface SliceAttempt {
  /** 1-based. */
  readonly number: number;
  /** No retry follows this attempt, so a retryable failure is final too. */
  readonly isLast: boolean;
}
