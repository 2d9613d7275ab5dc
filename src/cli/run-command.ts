import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { UsageError } from '../errors.js';
import { countSlices, planSlices } from '../plan-slices.js';
import { shiftIsoDate, todayIn } from '../report-date.js';
import type { ReportType } from '../reports/report-types.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { syncSlices } from './sync-slices.js';

export interface RunOptions extends CommonOptions {
  readonly from?: string;
  readonly to?: string;
  readonly portfolios?: number[];
  readonly reportTypes?: ReportType[];
  readonly concurrency?: number;
}

/** `report-sync run`: every slice of a date range, in this process. Dates default to yesterday. */
export async function runCommand(options: RunOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const { settings } = config;
  const yesterday = shiftIsoDate(todayIn(settings.schedule.timeZone), -1);
  const to = options.to ?? (options.from && options.from > yesterday ? options.from : yesterday);
  const from = options.from ?? to;
  if (from > to) throw new UsageError(`--from ${from} is after --to ${to}`);
  const range = {
    from,
    to,
    portfolios: options.portfolios ?? settings.portfolios,
    reportTypes: options.reportTypes ?? settings.reportTypes,
  };
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
      description: `syncing ${from} to ${to}: ${range.portfolios.length} portfolios × ${range.reportTypes.length} report types`,
    }),
  });
}
