#!/usr/bin/env node
// The published command: loads the TypeScript sources through tsx, so there is no build step to forget.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What the operating system's codes mean for the temporary directory, in words. */
const TMP_TROUBLE = {
  ENOENT: 'it does not exist',
  ENOTDIR: 'it is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
};

// tsx keeps its cache under os.tmpdir(): an unusable TMPDIR crashes inside tsx with a stack trace
// (and root would create a missing one) before report-sync could say anything. Tried by making a
// directory there, not with access(): root passes access() on a file or a read-only mount.
// tsx is imported only after this, in case loading it ever touches the cache.
const temporary = tmpdir();
try {
  rmSync(mkdtempSync(join(temporary, 'report-sync-probe-')), { recursive: true, force: true });
} catch (error) {
  const code = typeof error?.code === 'string' ? error.code : '';
  const reason = Object.hasOwn(TMP_TROUBLE, code) ? `${TMP_TROUBLE[code]}, ${code}` : String(error?.message ?? error);
  process.stderr.write(`report-sync: the temporary directory ${temporary} is not writable (${reason}); set TMPDIR to a writable directory\n`);
  process.exit(2);
}

const { register } = await import('tsx/esm/api');
register();
const { runCli } = await import('./main.ts');
await runCli();
