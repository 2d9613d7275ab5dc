import { SyncError } from '../errors/sync-error.js';
import { describeSlice, type Slice } from '../slice/slice.js';
import type { SliceCheckResult } from './slice-check-result.js';

/**
 * A file refused by a data-quality check set to `fail` (QUALITY_CHECK_FAILED, final: the same file
 * would fail again). The slice's transaction was rolled back, so it keeps its earlier rows;
 * `results` are every check's results, recorded with the failure in `slice_checks`.
 */
export class QualityCheckError extends SyncError {
  readonly results: readonly SliceCheckResult[];

  constructor(slice: Slice, fileName: string | null, results: readonly SliceCheckResult[]) {
    const failed = results.filter((result) => result.outcome === 'fail');
    super(
      'QUALITY_CHECK_FAILED',
      `${fileName ?? 'the file'} for ${describeSlice(slice)} fails ${failed.length === 1 ? 'a data-quality check' : `${failed.length} data-quality checks`}, so it was not loaded ` +
        `and the slice keeps its earlier rows: ${failed.map((result) => result.message).join('; ')}. ` +
        'Ask for the file to be restated, or, if it is right, change the setting named and run the slice again',
    );
    this.results = results;
  }
}
