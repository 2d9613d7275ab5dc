import type { AppConfig } from '../config/load-config.js';
import type { Logger } from '../logger.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from '../metrics/health-server.js';
import { SyncMetrics } from '../metrics/sync-metrics.js';
import { classifyWarehouseError } from '../warehouse/classify-warehouse-error.js';
import type { WarehouseHandle } from '../warehouse/open-warehouse.js';

/** The metrics of a command and the server that exposes them, when it has one. */
export interface CommandMetrics {
  readonly metrics: SyncMetrics;
  readonly server: HealthServer;
}

/**
 * Starts `/metrics`, `/healthz` and `/readyz` on `metrics.host`:`port` (the `--metrics-port` flag,
 * else `metrics.port`; null: none), and says where in one log line. Undefined when there is none.
 */
export async function startMetrics(config: AppConfig, logger: Logger, port: number | null | undefined, readiness: readonly ReadinessCheck[]): Promise<CommandMetrics | undefined> {
  if (port === null || port === undefined) return undefined;
  const metrics = new SyncMetrics();
  const server = await startHealthServer({ host: config.settings.metrics.host, port, metrics, readiness, logger });
  logger.info({ metrics: `${server.url}/metrics`, health: `${server.url}/healthz`, readiness: `${server.url}/readyz` }, 'serving metrics and health checks');
  return { metrics, server };
}

/** Readiness of the warehouse: one cheap read of the ledger. */
export function warehouseReadiness(warehouse: () => WarehouseHandle | undefined): ReadinessCheck {
  return {
    name: 'warehouse',
    check: async () => {
      const handle = warehouse();
      if (!handle) return 'not connected yet';
      try {
        await handle.db.selectFrom('report_loads').select('status').limit(1).execute();
        return undefined;
      } catch (error) {
        return classifyWarehouseError(error, `reading ${handle.location}`).message;
      }
    },
  };
}
