import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';

/** What the raw baseline queues: the same range, ids, name, data and priority as the product's backfill. */
export interface RawAddBulkOptions {
  readonly redisUrl: string;
  readonly prefix: string;
  readonly queueName: string;
  readonly from: string;
  readonly to: string;
  readonly portfolios: readonly number[];
  readonly reportTypes: readonly string[];
  readonly priority: number;
  readonly batchSize: number;
}

/**
 * The raw baseline of the plan-scale benchmark: BullMQ `Queue.addBulk` of one minimal job per
 * slice (same job name, data, id and priority as the product's), in batches, and nothing else:
 * no config, no warehouse, no retry or trimming options.
 * @returns how many jobs were handed to the queue
 */
export async function rawAddBulk(options: RawAddBulkOptions): Promise<number> {
  const connection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(options.queueName, { connection, prefix: options.prefix });
  try {
    let added = 0;
    let batch: { name: string; data: { portfolioId: number; reportType: string; reportDate: string }; opts: { jobId: string; priority: number } }[] = [];
    const last = Date.parse(`${options.to}T00:00:00Z`);
    for (let day = Date.parse(`${options.from}T00:00:00Z`); day <= last; day += 86_400_000) {
      const reportDate = new Date(day).toISOString().slice(0, 10);
      for (const portfolioId of options.portfolios) {
        for (const reportType of options.reportTypes) {
          batch.push({
            name: 'export-slice',
            data: { portfolioId, reportType, reportDate },
            opts: { jobId: `slice-${portfolioId}-${reportType}-${reportDate}`, priority: options.priority },
          });
          if (batch.length >= options.batchSize) {
            await queue.addBulk(batch);
            added += batch.length;
            batch = [];
          }
        }
      }
    }
    if (batch.length > 0) {
      await queue.addBulk(batch);
      added += batch.length;
    }
    return added;
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

// Run as a child process of the benchmark (so its peak RSS is its own): options as JSON in argv[2].
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const added = await rawAddBulk(JSON.parse(process.argv[2] ?? '{}') as RawAddBulkOptions);
  process.stdout.write(`added ${added}\n`);
}
