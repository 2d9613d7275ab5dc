import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';

/**
 * `report-sync migrate`: brings the warehouse schema up to date, then checks it (see
 * `connectWarehouse`): a damaged warehouse exits 2 naming what is wrong, never "up to date". Indexes
 * and views dropped by hand are re-created (they hold no data of their own).
 */
export async function migrateCommand(options: CommonOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const logger = createCliLogger(config, io, { progressBar: false });
  const warehouse = await connectWarehouse(config, { purpose: 'write', restoreAnalyticsObjects: true, signal: io.signal, logger });
  try {
    const { applied, restored } = warehouse;
    if (applied.length > 0) io.stdout.write(`Applied ${applied.join(', ')} to ${warehouse.location}\n`);
    if (restored.length > 0) io.stdout.write(`Re-created ${restored.join(', ')} in ${warehouse.location}\n`);
    if (applied.length === 0 && restored.length === 0) io.stdout.write(`${warehouse.location} is up to date\n`);
    return 0;
  } finally {
    await warehouse.close();
  }
}
