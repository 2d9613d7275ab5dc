import { Redis } from 'ioredis';
import { startPrivateRedis } from '../helpers/private-redis.js';

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

/**
 * Starts `redis-server` on a free loopback port with persistence off (no RDB fork, no AOF
 * rewrite disturbing the measurement), with a client for its figures. The caller must `stop()`
 * it, also when a benchmark fails.
 */
export async function startPrivateRedisServer(): Promise<PrivateRedisServer> {
  const server = await startPrivateRedis();
  const { url, port } = server;
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  const stop = async () => {
    client.disconnect();
    await server.destroy();
  };

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
