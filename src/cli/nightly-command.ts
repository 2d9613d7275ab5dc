import { nightlyPayloadOf } from '../../jobs/plan-night/data.js';
import { planNight } from '../../jobs/plan-night/handler.js';
import { nightlyPlanSettings } from '../queue/nightly-schedule.js';
import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { syncSlices } from './sync-slices.js';
import { shiftIsoDate, todayIn } from '../dates/report-date.js';

function yesterdayIn(timeZone: string): string {
  return shiftIsoDate(todayIn(timeZone), -1);
}

/** `report-sync nightly`: yesterday (in the configured time zone) plus the lookback re-checks, in this process. */
export async function nightlyCommand(options: CommonOptions & { concurrency?: number; metricsPort?: number }, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const { settings } = config;
  const upstream = resolveUpstreamConfig(config.env);
  const logger = createCliLogger(config, io);
  return syncSlices({
    config,
    upstream,
    logger,
    io,
    configFile: options.config,
    metricsPort: options.metricsPort,
    alert: { kind: 'nightly', what: `report-sync nightly of ${yesterdayIn(settings.schedule.timeZone)}` },
    plan: async (services) => {
      const plan = await planNight(services.ledger, nightlyPayloadOf(nightlyPlanSettings(settings)));
      return {
        slices: plan.slices,
        planned: plan.slices.length,
        range: { from: plan.lookbackFrom, to: plan.reportDate, portfolios: settings.portfolios, reportTypes: settings.reportTypes },
        description: `nightly sync of ${plan.reportDate} with ${plan.rechecks} re-checks since ${plan.lookbackFrom}`,
      };
    },
  });
}
