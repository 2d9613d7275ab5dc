import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findLeftovers, takeSettledSnapshot } from '../helpers/leak-check.js';

const ROOT = new URL('../../', import.meta.url).pathname;

// The detection behind test/helpers/leak-check-setup.ts, on real leaks made here and then cleaned up.
describe('findLeftovers', () => {
  it('names a listening server, an open socket, an interval and a running child process, and nothing once they are gone', async () => {
    const before = await takeSettledSnapshot(1_000);
    expect(await findLeftovers(before, 1_000)).toEqual([]);

    const server: Server = createServer((socket) => socket.on('error', () => {}));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
    const client = createConnection(address.port, '127.0.0.1');
    await once(client, 'connect');
    const interval = setInterval(() => {}, 60_000);
    const child: ChildProcess = spawn('sleep', ['30'], { stdio: 'ignore' });
    await once(child, 'spawn');

    const leftovers = await findLeftovers(before, 100);
    expect(leftovers).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^1 × TCPServerWrap: a TCP server still listening/),
        // The client's socket and the server's side of it.
        expect.stringMatching(/^2 × TCPSocketWrap: a TCP socket still open/),
        // At least the interval: a short timer of vitest's own may be pending beside it.
        expect.stringMatching(/^\d+ × Timeout: a timer or interval never cleared/),
        expect.stringMatching(/^1 × ProcessWrap: a child process handle/),
        `child process ${child.pid} still running: sleep 30`,
      ]),
    );

    client.destroy();
    server.close();
    clearInterval(interval);
    child.kill('SIGTERM');
    // Within the grace period the leftovers end on their own, and the check passes.
    expect(await findLeftovers(before, 2_000)).toEqual([]);
  });

  it('gives up after the grace period, with what is still there', async () => {
    const before = await takeSettledSnapshot(1_000);
    const interval = setInterval(() => {}, 60_000);
    const started = Date.now();
    try {
      expect(await findLeftovers(before, 300)).toEqual([expect.stringMatching(/^\d+ × Timeout: a timer or interval never cleared/)]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    } finally {
      clearInterval(interval);
    }
  });
});

describe('the leak check of every test file (vitest.config.ts setupFiles)', () => {
  it('fails a file that leaves a server and a child process behind, naming them, ends the child, and passes a tidy one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leak-check-'));
    const pidFile = join(dir, 'leaked.pid');
    try {
      const run = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/fixtures/leak-check/vitest.config.ts', '--reporter', 'verbose'], {
        cwd: ROOT,
        env: { ...process.env, LEAKED_PID_FILE: pidFile, NO_COLOR: '1', FORCE_COLOR: '0' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const output = run.stdout + run.stderr;
      expect(run.status, output).toBe(1);
      const leakedPid = Number(readFileSync(pidFile, 'utf8'));
      expect(output).toMatch(/test\/fixtures\/leak-check\/leaky\.leak\.ts left behind, 2 s after its last test and hook:/);
      expect(output).toMatch(/1 × TCPServerWrap: a TCP server still listening/);
      expect(output).toContain(`child process ${leakedPid} still running: sleep 30`);
      // The leaky file's test itself passed; only the file fails. The tidy file passes whole.
      expect(output).toMatch(/✓ .*leaky\.leak\.ts > starts a server and a child process and forgets them/);
      expect(output).toMatch(/✓ .*tidy\.leak\.ts > starts a server and a child process, closed by its afterAll/);
      expect(output).toMatch(/Test Files\s+1 failed \| 1 passed \(2\)/);
      // The check ended the leaked child rather than leave it running after the run.
      expect(existsSync(`/proc/${leakedPid}`) && !readFileSync(`/proc/${leakedPid}/stat`, 'utf8').includes(') Z ')).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
