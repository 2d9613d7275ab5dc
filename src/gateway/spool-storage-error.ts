import { SyncError } from '../errors.js';

/**
 * The machine's trouble while a downloaded body is spooled to disk (a full or read-only disk, a
 * directory removed under it, too many open files): `LOCAL_STORAGE`, retried, naming the directory,
 * the trouble in words and what to change. Never `EXPORT_NETWORK`: retrying the download cannot help
 * and the operator must hear that the disk, not the service, is at fault. A {@link SyncError} is
 * returned as it is.
 *
 * @param directory - the spool directory the body was going to (under TMPDIR)
 */
export function spoolStorageError(error: unknown, directory: string): SyncError {
  if (error instanceof SyncError) return error;
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  const known = SPOOL_TROUBLE[code];
  const reason = known ? `${known.words}, ${code}` : error instanceof Error ? error.message : String(error);
  const advice = ADVICE[known?.kind ?? 'other'];
  return new SyncError('LOCAL_STORAGE', `cannot spool the downloaded body to ${directory} (${reason}): ${advice}; the slice is retried`, { cause: error });
}

type TroubleKind = 'space' | 'size' | 'writable' | 'files' | 'other';

/** What to change, by kind of trouble. There is no spool setting of its own: TMPDIR decides where bodies go. */
const ADVICE: Record<TroubleKind, string> = {
  space: 'free space there, or point TMPDIR at a larger disk',
  size: 'raise the file-size limit (ulimit -f), or point TMPDIR at a file system that takes files this large',
  writable: 'make it writable by this user, or point TMPDIR at a writable directory',
  files: 'raise the open-file limit (ulimit -n) or lower concurrency',
  other: 'check that directory and its disk, or point TMPDIR at another one',
};

/** The operating system's codes a spool write or mkdir can meet, in words. */
const SPOOL_TROUBLE: Record<string, { words: string; kind: TroubleKind }> = {
  ENOSPC: { words: 'no space left on the device', kind: 'space' },
  EDQUOT: { words: 'disk quota exceeded', kind: 'space' },
  EFBIG: { words: 'file too large for this process or file system', kind: 'size' },
  EACCES: { words: 'not writable: permission denied', kind: 'writable' },
  EPERM: { words: 'not writable: operation not permitted', kind: 'writable' },
  EROFS: { words: 'not writable: read-only file system', kind: 'writable' },
  ENOENT: { words: 'the directory no longer exists', kind: 'writable' },
  ENOTDIR: { words: 'a part of the path is a file, not a directory', kind: 'writable' },
  EMFILE: { words: 'too many open files in this process', kind: 'files' },
  ENFILE: { words: 'too many open files on this machine', kind: 'files' },
  EIO: { words: 'an input/output error on the device', kind: 'other' },
};
