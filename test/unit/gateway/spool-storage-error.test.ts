import { describe, expect, it } from 'vitest';
import { ExportError, SyncError } from '../../../src/errors/sync-error.js';
import { spoolStorageError } from '../../../src/gateway/spool-storage-error.js';

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: something, write`), { code });
}

describe('spoolStorageError', () => {
  // A full disk cannot be made without mounting one: the errno is given as the OS would give it.
  it('names a full disk, the directory and what to change', () => {
    const cause = errno('ENOSPC');
    const error = spoolStorageError(cause, '/var/tmp/report-sync-spool/h-1-abcdef');
    expect(error.code).toBe('LOCAL_STORAGE');
    expect(error.retryable).toBe(true);
    expect(error.cause).toBe(cause);
    expect(error.message).toBe(
      'cannot spool the downloaded body to /var/tmp/report-sync-spool/h-1-abcdef (no space left on the device, ENOSPC): ' +
        'free space there, or point TMPDIR at a larger disk; the slice is retried',
    );
  });

  it.each([
    ['EDQUOT', 'disk quota exceeded', 'free space there'],
    ['EACCES', 'not writable: permission denied', 'point TMPDIR at a writable directory'],
    ['EROFS', 'not writable: read-only file system', 'point TMPDIR at a writable directory'],
    ['EMFILE', 'too many open files in this process', 'ulimit -n'],
    ['EWHATEVER', 'EWHATEVER: something, write', 'point TMPDIR at another one'],
  ])('words %s as local trouble', (code, words, advice) => {
    const error = spoolStorageError(errno(code), '/tmp/x');
    expect(error.code).toBe('LOCAL_STORAGE');
    expect(error.message).toContain(words);
    expect(error.message).toContain(advice);
  });

  it('leaves a SyncError as it is', () => {
    const tooLarge = new ExportError('EXPORT_TOO_LARGE', 'too large');
    expect(spoolStorageError(tooLarge, '/tmp/x')).toBe(tooLarge);
    expect(spoolStorageError(tooLarge, '/tmp/x')).toBeInstanceOf(SyncError);
  });
});
