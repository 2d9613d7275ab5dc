import { once } from 'node:events';
import { ExportQueue } from '../queue/export-queue.js';
import { createRedisConnector, type RedisConnector } from '../queue/redis-connection.js';
import { dashboardAccess } from '../dashboard/dashboard-access.js';
import { startDashboardServer } from '../dashboard/dashboard-server.js';
import { QueueView } from '../dashboard/queue-view.js';
import { Ledger } from '../warehouse/ledger/ledger.js';
import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { packageVersion } from '../runtime/package-version.js';

export interface DashboardOptions extends CommonOptions {
  readonly port: number;
  readonly host: string;
}

const version = packageVersion();

/**
 * `report-sync dashboard`: serves the coverage dashboard (read-only) until Ctrl-C / SIGTERM. The
 * warehouse must exist; the queue is shown when `REDIS_URL` (or `REDIS_CLUSTER_NODES`) is set, and said to be unreachable
 * (not waited for) while Redis is down.
 */
export async function dashboardCommand(options: DashboardOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const { settings } = config;
  const logger = createCliLogger(config, io, { progressBar: false });
  // The server checks this again; checked here too so that a host beyond loopback without a token
  // stops the command before it connects to anything.
  dashboardAccess({ token: settings.dashboard.token, host: options.host });
  const warehouse = await connectWarehouse(config, { purpose: 'read', signal: io.signal });
  let connector: RedisConnector | undefined;
  let exportQueue: ExportQueue | undefined;
  try {
    for (const damage of warehouse.damage) io.stderr.write(`report-sync: warning: ${damage}\n`);
    let queue: QueueView | undefined;
    if (config.env.REDIS_URL?.trim() || config.redisClusterNodes) {
      connector = createRedisConnector(config.redisUrl, logger, { clusterNodes: config.redisClusterNodes, prefix: settings.queue.prefix });
      const redis = connector.connect();
      exportQueue = new ExportQueue({ connection: redis, settings });
      const down = connector;
      queue = new QueueView({ queue: exportQueue.queue, location: connector.location, isDown: () => down.down || redis.status !== 'ready' });
    }
    const server = await startDashboardServer({
      ledger: new Ledger(warehouse),
      queue,
      defaults: {
        portfolios: settings.portfolios,
        reportTypes: settings.reportTypes,
        timeZone: settings.schedule.timeZone,
        lookbackDays: settings.schedule.lookbackDays,
        earliest: settings.dates.earliest,
      },
      warehouse: warehouse.location,
      configFile: options.config,
      host: options.host,
      token: settings.dashboard.token,
      port: options.port,
      logger,
      version,
    });
    try {
      const lines = [`Dashboard of ${warehouse.location} at ${server.url}`];
      lines.push(queue ? `Queue: ${connector!.location} (Bull Board at ${server.url}queues)` : 'Queue: not shown (neither REDIS_URL nor REDIS_CLUSTER_NODES is set)');
      // Beyond loopback the server refuses to start without a token, so no warning is left to give.
      if (settings.dashboard.token) lines.push('Login: the token of dashboard.token (Authorization: Bearer, or any user name with the token as password).');
      lines.push('Read-only. Press Ctrl-C to stop.');
      io.stdout.write(`${lines.join('\n')}\n`);
      if (io.signal && !io.signal.aborted) await once(io.signal, 'abort');
    } finally {
      await server.close();
    }
    return 0;
  } finally {
    // Redis may be down: drop the connections rather than wait for it to close them politely.
    connector?.disconnectAll();
    await exportQueue?.queue.close().catch(() => undefined);
    await warehouse.close();
  }
}
