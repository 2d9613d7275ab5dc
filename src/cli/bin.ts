#!/usr/bin/env node
// The published command (compiled to dist/src/cli/bin.js): takes its heap settings, probes the
// temporary directory, then runs the CLI, loaded only then so a restart for the heap settings
// costs one Node start-up, not two loads of the command.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { restartWithHeapSettings } from '../runtime/heap-settings.js';

restartWithHeapSettings();

/** What the operating system's codes mean for the temporary directory, in words. */
const TMP_TROUBLE: Readonly<Record<string, string>> = {
  ENOENT: 'it does not exist',
  ENOTDIR: 'it is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
};

// Downloads spool under os.tmpdir(): an unusable TMPDIR is said in one line at start, before any
// command could fail half-way (and root would create a missing one). Tried by making a directory
// there, not with access(): root passes access() on a file or a read-only mount.
const temporary = tmpdir();
try {
  rmSync(mkdtempSync(join(temporary, 'report-sync-probe-')), { recursive: true, force: true });
} catch (error) {
  const { code, message } = error as NodeJS.ErrnoException;
  const words = code === undefined ? undefined : TMP_TROUBLE[code];
  const reason = words === undefined ? message : `${words}, ${code}`;
  process.stderr.write(`report-sync: the temporary directory ${temporary} is not writable (${reason}); set TMPDIR to a writable directory\n`);
  process.exit(2);
}

const { runCli } = await import('./main.js');
await runCli();
