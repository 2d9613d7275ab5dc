import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import type { Logger } from '../logging/logger.js';
import type { RedisConnector } from './redis-connection.js';

/**
 * Closes the BullMQ worker, letting jobs in flight finish. While Redis is down BullMQ would wait
 * forever to record them, so the connections are dropped and the close forced; those slices are in
 * the warehouse anyway, and their jobs are retaken as stalled (unchanged) once Redis is back.
 */
export async function closeWorker(worker: Worker, connector: RedisConnector, logger: Logger): Promise<void> {
  const closing = worker.close();
  for (;;) {
    const finished = await Promise.race([closing.then(() => true), sleep(500).then(() => false)]);
    if (finished) return;
    if (connector.down) {
      logger.warn({ redis: connector.location }, 'Redis is down: not waiting for it to record the jobs in flight');
      // BullMQ's own close would wait for Redis forever; dropping every connection abandons it
      // and leaves nothing behind to keep the process alive.
      closing.catch(() => undefined);
      connector.disconnectAll();
      return;
    }
  }
}
