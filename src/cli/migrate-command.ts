import { migrateWarehouse } from '../warehouse/migrate-warehouse.js';
import { openWarehouse } from '../warehouse/open-warehouse.js';
import { loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';

/** `report-sync migrate`: brings the warehouse schema up to date. */
export async function migrateCommand(options: CommonOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const warehouse = await openWarehouse(config.databaseUrl, { cwd: config.cwd, busyTimeoutMs: config.settings.warehouse.busyTimeoutMs });
  try {
    const { applied } = await migrateWarehouse(warehouse);
    io.stdout.write(
      applied.length > 0 ? `Applied ${applied.join(', ')} to ${warehouse.location}\n` : `${warehouse.location} is up to date\n`,
    );
    return 0;
  } finally {
    await warehouse.close();
  }
}
