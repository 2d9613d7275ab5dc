/** What kind of local trouble a code is, for the advice that goes with it. */
export type LocalTroubleKind = 'space' | 'size' | 'writable' | 'files' | 'other';

/**
 * The operating system's codes that writing a file or making a directory can meet, in words: one
 * table for the spool, the SQLite warehouse and whatever else writes to this machine's disks.
 */
export const LOCAL_TROUBLE: Readonly<Record<string, { readonly words: string; readonly kind: LocalTroubleKind }>> = {
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
