import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse, type WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import type { ReportLoadsRow } from '../../src/warehouse/engine/warehouse-schema.js';
import { createTempDatabase } from './temp-warehouse.js';

/** A migrated warehouse of the test's own holding `rows` in its ledger, and a working directory for the CLI. */
export interface SeededWarehouse {
  readonly warehouse: WarehouseHandle;
  /** The CLI's environment: DATABASE_URL of this warehouse. */
  readonly env: Record<string, string>;
  readonly dir: string;
  close(): Promise<void>;
}

export async function seededWarehouse(dialect: WarehouseDialect, rows: readonly ReportLoadsRow[]): Promise<SeededWarehouse> {
  const database = await createTempDatabase(dialect);
  const warehouse = await openWarehouse(database.databaseUrl);
  await migrateWarehouse(warehouse);
  for (let i = 0; i < rows.length; i += 500)
    await warehouse.db
      .insertInto('report_loads')
      .values(rows.slice(i, i + 500))
      .execute();
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-seeded-'));
  return {
    warehouse,
    env: { DATABASE_URL: database.databaseUrl },
    dir,
    async close() {
      await warehouse.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
