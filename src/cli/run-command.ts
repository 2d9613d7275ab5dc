import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { planMissingSlices } from '../plan-missing-slices.js';
import { countSlices, planSlices } from '../plan-slices.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { resolveRange, type RangeOptions } from './resolve-range.js';
import { syncSlices } from './sync-slices.js';

export interface RunOptions extends CommonOptions, RangeOptions {
  readonly concurrency?: number;
  /** Only the slices the ledger does not have as loaded or no_data (never attempted, or failed). */
  readonly onlyMissing?: boolean;
  /** Load every file again, even one already loaded unchanged. */
  readonly force?: boolean;
  /** Serve metrics and health checks on this port while the run lasts. */
  readonly metricsPort?: number;
}

/** `report-sync run`: every slice of a date range, in this process. Dates default to yesterday. */
export async function runCommand(options: RunOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const range = resolveRange(options, config.settings);
  const upstream = resolveUpstreamConfig(config.env);
  const logger = createCliLogger(config, io);
  const what = `${range.from} to ${range.to}: ${range.portfolios.length} portfolios × ${range.reportTypes.length} report types`;
  return syncSlices({
    config,
    upstream,
    logger,
    io,
    force: options.force,
    configFile: options.config,
    metricsPort: options.metricsPort,
    alert: { kind: 'run', what: `report-sync run of ${range.from === range.to ? range.from : `${range.from} to ${range.to}`}` },
    plan: async (services) => {
      if (!options.onlyMissing) return { slices: planSlices(range), planned: countSlices(range), range, description: `syncing ${what}` };
      const done = (await services.ledger.countByStatus(range))
        .filter((count) => count.status !== 'failed')
        .reduce((sum, count) => sum + count.slices, 0);
      return {
        slices: planMissingSlices(range, services.ledger),
        planned: countSlices(range) - done,
        range,
        description: `syncing the slices of ${what} not yet loaded or no_data`,
      };
    },
  });
}
