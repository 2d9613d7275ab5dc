import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import { loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';

/**
 * `report-sync migrate`: brings the warehouse schema up to date, then checks it (see
 * `connectWarehouse`): a damaged warehouse exits 2 naming what is wrong, never "up to date".
 */
export async function migrateCommand(options: CommonOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const warehouse = await connectWarehouse(config, { purpose: 'write' });
  try {
    io.stdout.write(warehouse.applied.length > 0 ? `Applied ${warehouse.applied.join(', ')} to ${warehouse.location}\n` : `${warehouse.location} is up to date\n`);
    return 0;
  } finally {
    await warehouse.close();
  }
}
