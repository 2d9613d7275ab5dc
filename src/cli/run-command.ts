import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { UsageError } from '../errors/sync-error.js';
import { countSelectedSlices, planSelectedSlices } from '../planning/plan-selected-slices.js';
import { sliceSelection, type SliceSelection, type SliceSelectionOptions } from '../selection/slice-selection.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { printDryRun } from './print-dry-run.js';
import { resolveRange, type RangeOptions } from './resolve-range.js';
import { syncSlices } from './sync-slices.js';
import { countOf } from '../text/count-of.js';

export interface RunOptions extends CommonOptions, RangeOptions, SliceSelectionOptions {
  readonly concurrency?: number;
  /** Load every file again, even one already loaded unchanged. */
  readonly force?: boolean;
  /** Serve metrics and health checks on this port while the run lasts. */
  readonly metricsPort?: number;
  /** Say what would be requested and how long it would take; request, load and write nothing. */
  readonly dryRun?: boolean;
  /** With `dryRun`: print the plan as JSON. */
  readonly json?: boolean;
  /** With `dryRun`: seconds per export request for the estimate, instead of the assumed figure. */
  readonly requestSeconds?: number;
}

/**
 * `report-sync run`: every slice of a date range, in this process. Dates default to yesterday.
 * `--only-missing` takes the slices not loaded or no_data, `--failed [--code …]` only those whose
 * last outcome is failed (with those codes); `--dry-run` says what would be requested, and stops.
 */
export async function runCommand(options: RunOptions, io: CliIo): Promise<number> {
  if (!options.dryRun && (options.json || options.requestSeconds !== undefined)) {
    throw new UsageError('--json and --request-seconds go with --dry-run only: add --dry-run to see the plan, or leave them out to sync');
  }
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const range = resolveRange(options, config.settings);
  const selection = sliceSelection(options);
  // Before the credentials are read: a dry run asks for no token, so it needs none.
  if (options.dryRun) return printDryRun({ command: 'run', config, range, selection, json: options.json, requestSeconds: options.requestSeconds }, io);
  const upstream = resolveUpstreamConfig(config.env);
  const logger = createCliLogger(config, io);
  const what = `${range.from} to ${range.to}: ${countOf(range.portfolios.length, 'portfolio')} × ${countOf(range.reportTypes.length, 'report type')}`;
  return syncSlices({
    config,
    upstream,
    logger,
    io,
    force: options.force,
    configFile: options.config,
    metricsPort: options.metricsPort,
    alert: { kind: 'run', what: `report-sync run of ${range.from === range.to ? range.from : `${range.from} to ${range.to}`}` },
    plan: async (services) => ({
      slices: planSelectedSlices(range, selection, services.ledger),
      planned: await countSelectedSlices(range, selection, services.ledger),
      range,
      description: describeRun(selection, what),
    }),
  });
}

function describeRun(selection: SliceSelection, what: string): string {
  if (selection.kind === 'missing') return `syncing the slices of ${what} not yet loaded or no_data`;
  if (selection.kind === 'failed') {
    return `syncing the slices of ${what} whose last outcome is failed${selection.codes?.length ? ` with code ${selection.codes.join(' or ')}` : ''}`;
  }
  return `syncing ${what}`;
}
