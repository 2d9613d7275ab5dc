import { SyncError, UsageError } from '../../src/errors/sync-error.js';
import { parseSlice, type Slice } from '../../src/slice/slice.js';

/** An export job's data once checked: the slice, and whether to load its file even if unchanged. */
export interface ExportSliceData {
  readonly slice: Slice;
  /** `backfill --force`: load the file again even if it is the one already loaded. */
  readonly force: boolean;
}

/**
 * An export job's data as read from Redis, checked: anyone who can reach Redis can change it, and
 * the slice becomes a URL, a query and the ledger's key. Throws `USAGE_INVALID` naming the bad
 * field ("data is not a valid slice: …"), for the worker's log and the job's failed reason.
 */
export function parseExportSliceData(data: unknown): ExportSliceData {
  let slice: Slice;
  try {
    slice = parseSlice(data);
  } catch (error) {
    if (!(error instanceof SyncError)) throw error;
    throw new UsageError(`data is not a valid slice: ${error.message}`, { cause: error });
  }
  const { force } = data as { force?: unknown };
  if (force !== undefined && typeof force !== 'boolean') {
    throw new UsageError(`data is not a valid slice: force ${JSON.stringify(force) ?? String(force)} is not true or false`);
  }
  return { slice, force: force === true };
}
