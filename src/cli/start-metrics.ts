import type { AppConfig } from '../config/load-config.js';
import type { Logger } from '../logging/logger.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from '../metrics/health-server.js';
import { SyncMetrics } from '../metrics/sync-metrics.js';
import { classifyWarehouseError } from '../warehouse/engine/classify-warehouse-error.js';
import type { WarehouseHandle } from '../warehouse/engine/warehouse-engine.js';

/** The metrics of a command and the server that exposes them, when it has one. */
export interface CommandMetrics {
  readonly metrics: SyncMetrics;
  readonly server: HealthServer;
}

/** Where a command serves its metrics and health checks, and what they check. */
export interface MetricsServing {
  /** The `--metrics-port` flag, else `metrics.port`; null or undefined: none; 0: any free port. */
  readonly port: number | null | undefined;
  readonly readiness: readonly ReadinessCheck[];
  /** Where the port came from, named when it cannot be served. @defaultValue `--metrics-port` */
  readonly portSetting?: string;
}

/**
 * Starts `/metrics`, `/healthz` and `/readyz` on `metrics.host`:`port`, and says where in one log
 * line, with the port actually bound (port 0 picks any free one). Undefined when there is none.
 * @throws ConfigError naming the setting when the port cannot be served (another process on this host has it, or it is privileged)
 */
export async function startMetrics(config: AppConfig, logger: Logger, serving: MetricsServing): Promise<CommandMetrics | undefined> {
  const { port, readiness, portSetting = '--metrics-port' } = serving;
  if (port === null || port === undefined) return undefined;
  const metrics = new SyncMetrics();
  const server = await startHealthServer({ host: config.settings.metrics.host, port, metrics, readiness, logger, portSetting });
  logger.info({ port: server.port, metrics: `${server.url}/metrics`, health: `${server.url}/healthz`, readiness: `${server.url}/readyz` }, 'serving metrics and health checks');
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
