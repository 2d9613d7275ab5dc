import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SyncError } from '../../../src/errors/sync-error.js';
import { SpoolDirectory } from '../../../src/gateway/spool-directory.js';
import { createLogger } from '../../../src/logging/logger.js';
import { CapturedStream, logLines } from '../../helpers/captured-io.js';

const scratch = mkdtempSync(join(tmpdir(), 'report-sync-spool-dir-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const host = hostname().replace(/[^A-Za-z0-9._-]/g, '_');

const opened: SpoolDirectory[] = [];
afterEach(async () => {
  for (const spool of opened.splice(0)) await spool.close();
});

async function open(parent: string, logs = new CapturedStream()): Promise<SpoolDirectory> {
  const spool = await SpoolDirectory.open({ parent, logger: createLogger({ level: 'info', pretty: false, destination: logs }) });
  opened.push(spool);
  return spool;
}

/** A leftover as a process would have left it: a body directory with `bytes` in it. */
function leave(root: string, name: string, bytes = 1000, ageMs = 0): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'body-x'), { recursive: true });
  writeFileSync(join(dir, 'body-x', 'export.body'), Buffer.alloc(bytes));
  const when = new Date(Date.now() - ageMs);
  for (const path of [join(dir, 'body-x', 'export.body'), join(dir, 'body-x'), dir]) utimesSync(path, when, when);
  return dir;
}

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  return child.pid!;
}

async function openError(parent: string): Promise<SyncError> {
  const error = await SpoolDirectory.open({ parent, logger: createLogger({ level: 'silent' }) }).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(SyncError);
  return error as SyncError;
}

describe('SpoolDirectory', () => {
  it('makes a private directory per process under <parent>/report-sync-spool, and close() removes it', async () => {
    const parent = mkdtempSync(join(scratch, 'own-'));
    const spool = await open(parent);
    const root = join(parent, 'report-sync-spool');
    expect(spool.path.startsWith(`${root}/${host}-${process.pid}-`)).toBe(true);
    expect(statSync(root).mode & 0o777).toBe(0o700);
    expect(statSync(spool.path).mode & 0o777).toBe(0o700);
    const body = await spool.makeBodyDirectory();
    expect(body.startsWith(`${spool.path}/`)).toBe(true);
    await spool.close();
    expect(existsSync(spool.path)).toBe(false);
    expect(existsSync(root)).toBe(true);
  });

  it('takes back a root that others may write into', async () => {
    const parent = mkdtempSync(join(scratch, 'loose-'));
    mkdirSync(join(parent, 'report-sync-spool'));
    chmodSync(join(parent, 'report-sync-spool'), 0o777);
    await open(parent);
    expect(statSync(join(parent, 'report-sync-spool')).mode & 0o777).toBe(0o700);
  });

  it.each([
    ['a link', (root: string) => symlinkSync(scratch, root)],
    ['a file', (root: string) => writeFileSync(root, '')],
  ])('refuses a report-sync-spool that is %s (CONFIG_INVALID)', async (_what, make) => {
    const parent = mkdtempSync(join(scratch, 'foreign-'));
    make(join(parent, 'report-sync-spool'));
    const error = await openError(parent);
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(join(parent, 'report-sync-spool'));
    expect(error.message).toContain('TMPDIR');
  });

  it.each([
    ['missing', () => join(scratch, 'no-such-parent'), 'it does not exist, ENOENT'],
    [
      'a file',
      () => {
        writeFileSync(join(scratch, 'parent-file'), '');
        return join(scratch, 'parent-file');
      },
      'it is not a directory, ENOTDIR',
    ],
  ])('stops at start (LOCAL_STORAGE) when the temporary directory is %s, naming TMPDIR and the path', async (_what, parentOf, reason) => {
    const parent = parentOf();
    const error = await openError(parent);
    expect(error.code).toBe('LOCAL_STORAGE');
    expect(error.message).toContain(`the temporary directory ${parent} cannot hold downloads (${reason})`);
    expect(error.message).toContain('set TMPDIR to an existing directory this user can write');
  });

  describe('on open, leftovers', () => {
    it('of dead processes and of an earlier process with our pid are removed and reported with their size', async () => {
      const parent = mkdtempSync(join(scratch, 'leftovers-'));
      const root = join(parent, 'report-sync-spool');
      const dead = deadPid();
      const gone = leave(root, `${host}-${dead}-aaaaaa`, 4096);
      const earlier = leave(root, `${host}-${process.pid}-bbbbbb`, 2048);
      const logs = new CapturedStream();
      await open(parent, logs);
      expect(existsSync(gone)).toBe(false);
      expect(existsSync(earlier)).toBe(false);
      const lines = logLines(logs);
      expect(lines.find((line) => line.path === gone)).toMatchObject({ bytes: 4096, level: 40 });
      expect(String(lines.find((line) => line.path === gone)!.msg)).toContain(`process ${dead}, which is gone`);
      expect(lines.find((line) => line.path === earlier)).toMatchObject({ bytes: 2048 });
      expect(String(lines.find((line) => line.path === earlier)!.msg)).toContain('a restarted container');
    });

    it('of live processes, and young ones of other hosts, are kept', async () => {
      const parent = mkdtempSync(join(scratch, 'kept-'));
      const root = join(parent, 'report-sync-spool');
      const live = leave(root, `${host}-1-cccccc`);
      const otherHost = leave(root, `some-other-host-${deadPid()}-dddddd`, 1000, 23 * 3_600_000);
      const logs = new CapturedStream();
      await open(parent, logs);
      expect(existsSync(live)).toBe(true);
      expect(existsSync(otherHost)).toBe(true);
      expect(logs.text).toBe('');
    });

    it('of other hosts untouched for over a day are removed (a shared /tmp cannot ask their pids)', async () => {
      const parent = mkdtempSync(join(scratch, 'stale-'));
      const root = join(parent, 'report-sync-spool');
      const stale = leave(root, 'some-other-host-1-eeeeee', 3000, 25 * 3_600_000);
      const logs = new CapturedStream();
      await open(parent, logs);
      expect(existsSync(stale)).toBe(false);
      expect(logLines(logs).find((line) => line.path === stale)).toMatchObject({ bytes: 3000 });
    });

    it('another spool directory of this same process is not one', async () => {
      const parent = mkdtempSync(join(scratch, 'same-process-'));
      const first = await open(parent);
      await open(parent);
      expect(existsSync(first.path)).toBe(true);
    });
  });

  describe('makeBodyDirectory', () => {
    it('makes the directory again when a /tmp cleaner swept it', async () => {
      const parent = mkdtempSync(join(scratch, 'swept-'));
      const spool = await open(parent);
      rmSync(join(parent, 'report-sync-spool'), { recursive: true });
      const body = await spool.makeBodyDirectory();
      expect(body.startsWith(`${spool.path}/`)).toBe(true);
    });

    it('fails as LOCAL_STORAGE, naming the directory, when the temporary directory itself is gone', async () => {
      const parent = mkdtempSync(join(scratch, 'gone-'));
      const spool = await open(parent);
      rmSync(parent, { recursive: true });
      const error = await spool.makeBodyDirectory().catch((thrown: unknown) => thrown as SyncError);
      expect(error).toBeInstanceOf(SyncError);
      expect((error as SyncError).code).toBe('LOCAL_STORAGE');
      expect((error as SyncError).retryable).toBe(true);
      expect((error as SyncError).message).toContain(`cannot spool the downloaded body to ${spool.path}`);
      expect((error as SyncError).message).toContain('ENOENT');
    });
  });

  it('leaves nothing in the root once closed', async () => {
    const parent = mkdtempSync(join(scratch, 'empty-'));
    const spool = await open(parent);
    await spool.makeBodyDirectory();
    await spool.close();
    expect(readdirSync(join(parent, 'report-sync-spool'))).toEqual([]);
  });
});
