import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { countSlices, planSlices } from '../plan-slices.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { resolveRange, type RangeOptions } from './resolve-range.js';
import { syncSlices } from './sync-slices.js';

export interface RunOptions extends CommonOptions, RangeOptions {
  readonly concurrency?: number;
}

/** `report-sync run`: every slice of a date range, in this process. Dates default to yesterday. */
export async function runCommand(options: RunOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const range = resolveRange(options, config.settings);
  const upstream = resolveUpstreamConfig(config.env);
  const logger = createCliLogger(config, io);
  return syncSlices({
    config,
    upstream,
    logger,
    io,
    plan: () => ({
      slices: planSlices(range),
      planned: countSlices(range),
      description: `syncing ${range.from} to ${range.to}: ${range.portfolios.length} portfolios × ${range.reportTypes.length} report types`,
    }),
  });
}
