import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { createRedisConnector } from '../queue/redis-connection.js';
import { startMetrics, warehouseReadiness } from './start-metrics.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import type { WorkerParts } from './serve-worker.js';

/**
 * `report-sync worker`: processes export jobs until SIGTERM/SIGINT, then finishes those in flight
 * and exits 0. No upstream answer stops it (credential trouble pauses it, see `CredentialsPause`);
 * its own bad configuration does (exit 2, nothing left open), an unservable metrics port included.
 */
export async function workerCommand(options: CommonOptions & { concurrency?: number; metricsPort?: number }, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const { settings } = config;
  const upstream = resolveUpstreamConfig(config.env);
  const logger = createCliLogger(config, io, { progressBar: false });
  const connector = createRedisConnector(config.redisUrl, logger, { clusterNodes: config.redisClusterNodes, prefix: settings.queue.prefix });
  const opened: WorkerParts = {};
  // Up before anything else: a port another worker on this host holds stops this one before a
  // connection is made or the rest of the worker is loaded, and /readyz says what it waits for.
  const exposed = await startMetrics(config, logger, {
    port: options.metricsPort ?? settings.metrics.port,
    portSetting: 'metrics.port (REPORT_SYNC_METRICS__PORT, or --metrics-port)',
    readiness: [
      {
        name: 'redis',
        check: async () => {
          const { redis } = opened;
          if (!redis || connector.down || redis.status !== 'ready') return `Redis at ${connector.location} is unreachable (reconnecting)`;
          await redis.ping();
          return undefined;
        },
      },
      warehouseReadiness(() => opened.services?.warehouse),
      { name: 'credentials', check: async () => opened.credentials?.refusal },
    ],
  });
  try {
    // Loaded once the port is held: most of the worker's start-up time is loading these modules.
    const { serveWorker } = await import('./serve-worker.js');
    return await serveWorker({ config, upstream, logger, connector, opened, metrics: exposed?.metrics, signal: io.signal, stderr: io.stderr });
  } finally {
    await exposed?.server.close();
  }
}
