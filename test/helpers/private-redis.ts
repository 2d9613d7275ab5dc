import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

export interface PrivateRedisOptions {
  /**
   * Keep the data in an append-only file (fsync every second, the production recommendation), so
   * a restart keeps the queue; without it a restart empties Redis. @defaultValue false
   */
  readonly appendOnly?: boolean;
  /** `requirepass`: `url` then carries it, as REDIS_URL would. @defaultValue none */
  readonly password?: string;
}

/**
 * A redis-server of the test's own on a free loopback port, which a test may kill and start again
 * on the same port without touching the shared Redis. The caller must `destroy()` it, also when a
 * test fails.
 */
export async function startPrivateRedis(options: PrivateRedisOptions = {}) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-private-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--daemonize', 'no'];
  args.push(...(options.appendOnly ? ['--appendonly', 'yes', '--appendfsync', 'everysec'] : ['--appendonly', 'no']));
  if (options.password !== undefined) args.push('--requirepass', options.password);
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';
  const url = `redis://${options.password === undefined ? '' : `:${encodeURIComponent(options.password)}@`}127.0.0.1:${port}`;

  const start = async (): Promise<void> => {
    const started = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    exited = new Promise((resolve) => started.on('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        // With AOF, the server answers LOADING until the file is read back.
        if ((await probe.ping()) === 'PONG') return;
      } catch {
        if (Date.now() > deadline || started.exitCode !== null) {
          throw new Error(`private redis-server on port ${port} did not start (is redis-server installed?):\n${output}`);
        }
        await sleep(50);
      } finally {
        probe.disconnect();
      }
    }
  };

  const kill = async (signal: NodeJS.Signals): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };

  await start();
  return {
    url,
    port,
    /** Kills the server at once (SIGKILL), as a crash or an OOM kill would. */
    crash: () => kill('SIGKILL'),
    /** Starts it again on the same port (and, with AOF, the same data). */
    start,
    /** Stops the server and removes its directory. */
    async destroy(): Promise<void> {
      await kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type PrivateRedis = Awaited<ReturnType<typeof startPrivateRedis>>;
