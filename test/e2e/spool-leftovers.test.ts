import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SpoolDirectory } from '../../src/gateway/spool-directory.js';
import { createLogger } from '../../src/logging/logger.js';
import { CapturedStream, logLines } from '../helpers/captured-io.js';
import { startCliProcess } from '../helpers/cli-process.js';

const repo = new URL('../..', import.meta.url).pathname;
const child = new URL('../helpers/spool-child.ts', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'report-sync-spool-e2e-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const started: ChildProcess[] = [];
afterEach(() => {
  for (const spawned of started.splice(0)) if (spawned.exitCode === null && spawned.signalCode === null) spawned.kill('SIGKILL');
});

interface ChildReport {
  dir?: string;
  file?: string;
  code?: string;
  message?: string;
}

/** Starts the spooling child (under `ulimit -f <kib>` when given) and resolves with its first line. */
function startSpooler(parent: string, bytes: number, fileLimitKib?: number): Promise<{ spooler: ChildProcess; report: ChildReport }> {
  const args = ['--import', 'tsx', child, parent, String(bytes)];
  const spawned = fileLimitKib
    ? spawn('bash', ['-c', `ulimit -f ${fileLimitKib}; exec "$0" "$@"`, process.execPath, ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, args, { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
  started.push(spawned);
  return new Promise((resolve, reject) => {
    let text = '';
    spawned.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const end = text.indexOf('\n');
      if (end >= 0) resolve({ spooler: spawned, report: JSON.parse(text.slice(0, end)) as ChildReport });
    });
    spawned.on('exit', (code, signal) => reject(new Error(`the spooling child ended (${code ?? signal}) before reporting: ${text}`)));
  });
}

function exited(spawned: ChildProcess): Promise<void> {
  return spawned.exitCode !== null || spawned.signalCode !== null ? Promise.resolve() : new Promise((resolve) => spawned.once('exit', () => resolve()));
}

function capturingLogger() {
  const logs = new CapturedStream();
  return { logs, logger: createLogger({ level: 'info', pretty: false, destination: logs }) };
}

describe('spooled bodies left by killed processes', () => {
  it('are removed, and reported with their size, when the next process opens the spool directory', async () => {
    const parent = mkdtempSync(join(scratch, 'killed-'));
    const { spooler, report } = await startSpooler(parent, 256 * 1024);
    expect(report.file).toBeTruthy();
    spooler.kill('SIGKILL');
    await exited(spooler);
    // kill -9 skips every dispose(): the body is still on disk.
    expect(existsSync(report.file!)).toBe(true);

    const { logs, logger } = capturingLogger();
    const spool = await SpoolDirectory.open({ parent, logger });
    try {
      expect(existsSync(report.dir!)).toBe(false);
      const removed = logLines(logs).filter((line) => line.path === report.dir);
      expect(removed).toHaveLength(1);
      expect(removed[0]!.bytes).toBe(256 * 1024);
      expect(removed[0]!.msg).toContain(`${spooler.pid}, which is gone`);
    } finally {
      await spool.close();
    }
  });

  it('are not taken from a process that is still alive', async () => {
    const parent = mkdtempSync(join(scratch, 'alive-'));
    const { spooler, report } = await startSpooler(parent, 64 * 1024);
    const { logs, logger } = capturingLogger();
    const spool = await SpoolDirectory.open({ parent, logger });
    try {
      expect(existsSync(report.file!)).toBe(true);
      expect(logs.text).toBe('');
    } finally {
      await spool.close();
      spooler.kill('SIGKILL');
    }
  });
});

describe('a spool file the machine refuses to grow', () => {
  it('fails the body as LOCAL_STORAGE naming the directory, and leaves nothing behind', async () => {
    const parent = mkdtempSync(join(scratch, 'fsize-'));
    // A real write error without root tricks: past RLIMIT_FSIZE, Node (which ignores SIGXFSZ) gets EFBIG.
    const { spooler, report } = await startSpooler(parent, 4 * 1024 * 1024, 512);
    await exited(spooler);
    expect(report.code).toBe('LOCAL_STORAGE');
    expect(report.message).toContain(join(parent, 'report-sync-spool'));
    expect(report.message).toContain('EFBIG');
    expect(report.message).toContain('ulimit -f');
    expect(readdirSync(join(parent, 'report-sync-spool'))).toEqual([]);
  });
});

describe('the report-sync command with an unusable TMPDIR', () => {
  it.each([
    ['a missing directory', join(scratch, 'no-such-dir'), 'it does not exist, ENOENT'],
    ['a file', join(scratch, 'a-file'), 'it is not a directory, ENOTDIR'],
  ])('stops with exit 2 and one line naming it (%s)', async (_what, dir, reason) => {
    writeFileSync(join(scratch, 'a-file'), 'not a directory');
    const cwd = mkdtempSync(join(scratch, 'cwd-'));
    const cli = startCliProcess(['status'], { cwd, env: { TMPDIR: dir } });
    expect(await cli.exited).toBe(2);
    expect(cli.output()).toMatch(/^report-sync: [^\n]+\n$/);
    expect(cli.output()).toContain(`the temporary directory ${dir} is not writable (${reason})`);
    expect(cli.output()).toContain('set TMPDIR');
    // Nothing made the missing directory on the way (root could have).
    expect(existsSync(join(scratch, 'no-such-dir'))).toBe(false);
  });
});
