import type { AppConfig } from '../config/load-config.js';
import { dryRunPlan } from '../planning/dry-run-plan.js';
import type { SliceRange } from '../slice/slice-range.js';
import type { SliceSelection } from '../selection/slice-selection.js';
import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { Ledger } from '../warehouse/ledger/ledger.js';
import { MissingWarehouseError } from '../warehouse/engine/missing-warehouse-error.js';
import type { CliIo } from './cli-io.js';
import { formatDryRun } from './format-dry-run.js';

export interface PrintDryRunOptions {
  readonly command: 'run' | 'backfill';
  readonly config: AppConfig;
  readonly range: SliceRange;
  readonly selection: SliceSelection;
  /** Print the plan as JSON instead of text. */
  readonly json?: boolean;
  /** `--request-seconds`: seconds per export request for the estimate, instead of the assumed figure. */
  readonly requestSeconds?: number;
}

/**
 * `run --dry-run` and `backfill --dry-run`: what the sync would request and how long it would take.
 * Builds none of the sync's services (token, HTTP pool, spool, Redis) and opens the warehouse
 * read-only if it exists: a dry run never creates a SQLite file, migrates or writes the ledger.
 */
export async function printDryRun(options: PrintDryRunOptions, io: CliIo): Promise<number> {
  let warehouse: Awaited<ReturnType<typeof connectWarehouse>> | undefined;
  let location: string;
  try {
    warehouse = await connectWarehouse(options.config, { purpose: 'read', signal: io.signal });
    location = warehouse.location;
  } catch (error) {
    if (!(error instanceof MissingWarehouseError)) throw error;
    location = error.location;
  }
  try {
    // Counts from a damaged ledger are still worth showing; the damage is said, as `status` does.
    for (const damage of warehouse?.damage ?? []) io.stderr.write(`report-sync: warning: ${damage}\n`);
    const plan = await dryRunPlan({
      command: options.command,
      range: options.range,
      selection: options.selection,
      ledger: warehouse ? new Ledger(warehouse) : undefined,
      location,
      settings: options.config.settings,
      secondsPerRequest: options.requestSeconds,
    });
    io.stdout.write(options.json ? `${JSON.stringify(plan, null, 2)}\n` : formatDryRun(plan));
    return 0;
  } finally {
    await warehouse?.close();
  }
}
