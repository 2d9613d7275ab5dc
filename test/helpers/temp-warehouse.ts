import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateWarehouse } from '../../src/warehouse/migrate-warehouse.js';
import { openWarehouse, type WarehouseHandle } from '../../src/warehouse/open-warehouse.js';

/** A migrated SQLite warehouse in a temporary directory; `close()` removes it. */
export async function createTempWarehouse(): Promise<WarehouseHandle & { readonly databaseUrl: string; readonly dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-test-'));
  const databaseUrl = `sqlite:${join(dir, 'warehouse.sqlite')}`;
  const warehouse = await openWarehouse(databaseUrl);
  await migrateWarehouse(warehouse);
  return {
    ...warehouse,
    databaseUrl,
    dir,
    close: async () => {
      await warehouse.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
