import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

/** A redis-server of the benchmark's own, so `used_memory` is the benchmark's alone. */
export interface PrivateRedisServer {
  readonly url: string;
  readonly port: number;
  /** `INFO memory` → `used_memory`, in bytes. */
  usedMemory(): Promise<number>;
  /** CPU time the server has used so far (`INFO cpu`, user + system), in ms. */
  cpuMs(): Promise<number>;
  /** Empties the server (it is ours alone). */
  flush(): Promise<void>;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * Starts `redis-server` on a free loopback port with persistence off (no RDB fork, no AOF
 * rewrite disturbing the measurement). The caller must `stop()` it, also when a benchmark fails.
 */
export async function startPrivateRedisServer(): Promise<PrivateRedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => {});

  const stop = async () => {
    client.disconnect();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch {
      client.disconnect();
      if (Date.now() > deadline || child.exitCode !== null) {
        await stop();
        throw new Error(`private redis-server on port ${port} did not start (is redis-server installed?):\n${output}`);
      }
      await sleep(50);
    }
  }

  return {
    url,
    port,
    async usedMemory() {
      const info = await client.info('memory');
      const match = /^used_memory:(\d+)/m.exec(info);
      if (!match) throw new Error('INFO memory has no used_memory line');
      return Number(match[1]);
    },
    async cpuMs() {
      const info = await client.info('cpu');
      const user = /^used_cpu_user:([\d.]+)/m.exec(info);
      const system = /^used_cpu_sys:([\d.]+)/m.exec(info);
      if (!user || !system) throw new Error('INFO cpu has no used_cpu_user / used_cpu_sys line');
      return (Number(user[1]) + Number(system[1])) * 1000;
    },
    async flush() {
      await client.flushall();
    },
    stop,
  };
}
