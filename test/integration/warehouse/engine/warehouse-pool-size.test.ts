import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config/load-config.js';
import { connectWarehouse } from '../../../../src/warehouse/connect-warehouse.js';
import { createTempDatabase } from '../../../helpers/temp-warehouse.js';

/** The most connections to its database a warehouse opened with these variables holds while 12 reads wait on Postgres at once. */
async function mostConnectionsUnderLoad(env: Record<string, string>): Promise<number> {
  const cwd = mkdtempSync(join(tmpdir(), 'report-sync-pool-'));
  const database = await createTempDatabase('postgres');
  try {
    const config = loadConfig({ cwd, env: { ...env, DATABASE_URL: database.databaseUrl }, readDotEnv: false });
    const warehouse = await connectWarehouse(config, { purpose: 'write' });
    try {
      let most = 0;
      const reads = Array.from({ length: 12 }, () => sql`select pg_sleep(0.3)`.execute(warehouse.db));
      // Each count waits for a pooled connection too, so it sees the pool while the reads hold it.
      for (let i = 0; i < 5; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database()`.execute(warehouse.db);
        most = Math.max(most, rows[0]!.n);
      }
      await Promise.all(reads);
      return most;
    } finally {
      await warehouse.close();
    }
  } finally {
    await database.drop();
    rmSync(cwd, { recursive: true, force: true });
  }
}

describe('warehouse.poolSize (Postgres)', () => {
  it('keeps at most that many connections open, however many reads wait', async () => {
    expect(await mostConnectionsUnderLoad({ REPORT_SYNC_WAREHOUSE__POOL_SIZE: '3' })).toBe(3);
  }, 30_000);

  it('keeps up to 10 by default, as before the setting', async () => {
    expect(await mostConnectionsUnderLoad({})).toBe(10);
  }, 30_000);
});
