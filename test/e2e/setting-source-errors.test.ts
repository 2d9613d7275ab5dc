import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_BIN } from '../helpers/cli-bin.js';

/*
 * A bad setting is blamed on the layer that really set it, by every command, before the command
 * touches anything: the compiled CLI exits 2 at once naming the file, the `.env` line, the
 * variable or the flag.
 */

const COMMANDS: string[][] = [
  ['config'],
  ['run', '--from', '2024-01-02', '--to', '2024-01-02'],
  ['nightly'],
  ['worker'],
  ['backfill', '--from', '2024-01-02', '--to', '2024-01-02'],
  ['dashboard', '--port', '0'],
  ['status', '--from', '2024-01-02', '--to', '2024-01-02'],
  ['check'],
];

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A working directory holding `files`; REDIS_URL and DATABASE_URL point where nothing answers, so nothing could be touched. */
function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-setting-source-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'config'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function cli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_BIN, ...args],
      { cwd, env: { PATH: process.env.PATH ?? '', DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none', REDIS_URL: 'redis://127.0.0.1:9', ...env }, timeout: 20_000 },
      (error, _stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stderr, ms: Date.now() - started });
      },
    );
  });
}

const SOURCES: [string, () => { cwd: string; env?: Record<string, string>; args?: string[] }, RegExp][] = [
  ['the environment', () => ({ cwd: project({}), env: { REPORT_SYNC_CONCURRENCY: '0' } }), /concurrency \(from REPORT_SYNC_CONCURRENCY\): Too small/],
  ['config/local.json', () => ({ cwd: project({ 'config/local.json': '{"concurrency":0}' }) }), /concurrency \(from \/\S+\/config\/local\.json\): Too small/],
  ['a --config file', () => ({ cwd: project({ 'extra.json': '{"concurrency":0}' }), args: ['--config', 'extra.json'] }), /concurrency \(from \/\S+\/extra\.json\): Too small/],
  [
    'REPORT_SYNC_CONFIG',
    () => ({ cwd: project({ 'named.json': '{"concurrency":0}' }), env: { REPORT_SYNC_CONFIG: 'named.json' } }),
    /concurrency \(from \/\S+\/named\.json\): Too small/,
  ],
  [
    'a .env line',
    () => ({ cwd: project({ '.env': '# workers per host\nREPORT_REALM=x\n\nREPORT_SYNC_CONCURRENCY=0\n' }) }),
    /concurrency \(from \.env line 4: REPORT_SYNC_CONCURRENCY\): Too small/,
  ],
];

describe('a bad setting, blamed on its real source by every command', () => {
  it.each(SOURCES)('from %s', { timeout: 90_000 }, async (name, make, blamed) => {
    const { cwd, env, args = [] } = make();
    // Every command for the .env line, which is read by each; config, run, nightly and worker for the others.
    const commands = name === 'a .env line' ? COMMANDS : COMMANDS.slice(0, 4);
    // Two at a time: the machine's cores are shared, and "at once" is measured per process.
    const results: Awaited<ReturnType<typeof cli>>[] = [];
    for (let index = 0; index < commands.length; index += 2) {
      results.push(...(await Promise.all(commands.slice(index, index + 2).map((command) => cli([...command, ...args], cwd, env)))));
    }
    results.forEach((result, index) => {
      const command = commands[index]![0]!;
      expect(result.code, `${command}: ${result.stderr}`).toBe(2);
      expect(result.stderr, command).toMatch(blamed);
      expect(result.stderr, command).not.toContain('command-line flags');
      // At once: a worker that got past its settings would wait for Redis (nothing answers there) until killed at 20 s.
      expect(result.ms, command).toBeLessThan(15_000);
    });
  });

  it('blames a flag that was given', async () => {
    const result = await cli(['run', '--concurrency', '0'], project({}));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--concurrency/);
  });
});
