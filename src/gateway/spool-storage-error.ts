import { SyncError } from '../errors/sync-error.js';
import { LOCAL_TROUBLE, type LocalTroubleKind } from '../errors/local-trouble.js';

/**
 * Local disk trouble while spooling a body: `LOCAL_STORAGE` (retried), naming the directory and
 * what to change; never `EXPORT_NETWORK`, so the operator hears that the disk is at fault.
 * A {@link SyncError} is returned as it is.
 * @param directory - the spool directory the body was going to (under TMPDIR)
 */
export function spoolStorageError(error: unknown, directory: string): SyncError {
  if (error instanceof SyncError) return error;
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  const known = LOCAL_TROUBLE[code];
  const reason = known ? `${known.words}, ${code}` : error instanceof Error ? error.message : String(error);
  const advice = ADVICE[known?.kind ?? 'other'];
  return new SyncError('LOCAL_STORAGE', `cannot spool the downloaded body to ${directory} (${reason}): ${advice}; the slice is retried`, { cause: error });
}

/** What to change, by kind of trouble. There is no spool setting of its own: TMPDIR decides where bodies go. */
const ADVICE: Record<LocalTroubleKind, string> = {
  space: 'free space there, or point TMPDIR at a larger disk',
  size: 'raise the file-size limit (ulimit -f), or point TMPDIR at a file system that takes files this large',
  writable: 'make it writable by this user, or point TMPDIR at a writable directory',
  files: 'raise the open-file limit (ulimit -n) or lower concurrency',
  other: 'check that directory and its disk, or point TMPDIR at another one',
};
