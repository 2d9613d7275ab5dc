import { UsageError } from '../errors/sync-error.js';

/**
 * Which slices of a range a sync takes: all of them; those the ledger does not have as `loaded`
 * or `no_data` (`--only-missing`: never attempted, or failed); or only those whose last outcome is
 * `failed` (`--failed`), optionally only with some error codes (`--code`).
 */
export type SliceSelection = { readonly kind: 'all' } | { readonly kind: 'missing' } | { readonly kind: 'failed'; readonly codes?: readonly string[] };

/** The selection flags `run` and `backfill` share. */
export interface SliceSelectionOptions {
  readonly onlyMissing?: boolean;
  readonly failed?: boolean;
  /** Only failures with these error codes; implies `failed`, as it does for `status`. */
  readonly code?: readonly string[];
}

/**
 * The selection the flags ask for. `--only-missing` with `--failed` (or `--code`) is refused: missing
 * already includes failed, so whoever typed both most likely meant one of them.
 * @throws UsageError saying which flag does what
 */
export function sliceSelection(options: SliceSelectionOptions): SliceSelection {
  const failed = options.failed === true || (options.code?.length ?? 0) > 0;
  if (failed && options.onlyMissing) {
    const flag = options.failed ? '--failed' : '--code';
    throw new UsageError(
      `--only-missing and ${flag} do not go together: --only-missing already takes the failed slices as well as those never attempted; ` +
        'use --failed (with --code to narrow it) for the failed slices only, or --only-missing alone for both',
    );
  }
  if (failed) return options.code?.length ? { kind: 'failed', codes: [...options.code] } : { kind: 'failed' };
  return options.onlyMissing ? { kind: 'missing' } : { kind: 'all' };
}
