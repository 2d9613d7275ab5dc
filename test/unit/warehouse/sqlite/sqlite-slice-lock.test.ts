import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Slice } from '../../../../src/slice/slice.js';
import { migrateWarehouse } from '../../../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { CommitGroups } from '../../../../src/warehouse/loading/commit-groups.js';
import { holdSqliteLock } from '../../../helpers/hold-sqlite-lock.js';
import { createTempDatabase } from '../../../helpers/temp-warehouse.js';

const slice: Slice = { portfolioId: 1001, reportType: 'index', reportDate: '2024-03-01' };

/**
 * The longest gap between ticks of a 5 ms interval while `work` runs: how long the event loop was
 * blocked. SQLite's own busy wait blocks it for the whole wait, in one call; a loaded machine (CI
 * runs test files side by side) holds a free loop back now and then too, so the tests wait long
 * and allow a quarter of the wait.
 */
async function longestStall<T>(work: Promise<T>): Promise<{ result: PromiseSettledResult<T>; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    const [result] = await Promise.allSettled([work]);
    // The gap up to now counts too: a loop blocked all along never ticked at all.
    return { result: result!, stallMs: Math.max(stallMs, performance.now() - last) };
  } finally {
    clearInterval(ticker);
  }
}

describe('SQLite write lock held by another process', () => {
  let warehouse: WarehouseHandle | undefined;
  let drop: (() => Promise<void>) | undefined;
  let release: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await release?.();
    await warehouse?.close();
    await drop?.();
    warehouse = drop = release = undefined;
  });

  async function lockedWarehouse(busyTimeoutMs: number, holdMs: number) {
    const database = await createTempDatabase('sqlite');
    drop = database.drop;
    warehouse = await openWarehouse(database.databaseUrl, { busyTimeoutMs });
    await migrateWarehouse(warehouse);
    const holder = await holdSqliteLock(database.databaseUrl.slice('sqlite:'.length), holdMs);
    release = holder.release;
    return { warehouse, holder };
  }

  const groupsOf = (handle: WarehouseHandle) => new CommitGroups({ db: handle.db, sliceLock: handle.sliceLock, maxSlices: 50, maxOpenMs: 250, parallel: 1 });

  it('waits for it with the event loop free, and writes once it is released', async () => {
    const holdMs = 1_000;
    const { warehouse: handle, holder } = await lockedWarehouse(10_000, holdMs);
    const { result, stallMs } = await longestStall(groupsOf(handle).write(slice, async () => 'written'));
    expect(result).toEqual({ status: 'fulfilled', value: 'written' });
    expect(await holder.released).toBe(0);
    // SQLite's own busy wait would have blocked the process for the whole second.
    expect(stallMs).toBeLessThan(holdMs / 4);
  });

  it('gives up after the busy timeout with SQLITE_BUSY, and later statements wait SQLite’s way again', async () => {
    const busyTimeoutMs = 1_000;
    const { warehouse: handle } = await lockedWarehouse(busyTimeoutMs, 60_000);
    const startedAt = performance.now();
    const { result, stallMs } = await longestStall(groupsOf(handle).write(slice, async () => 'written'));
    expect(result.status).toBe('rejected');
    expect(((result as PromiseRejectedResult).reason as { code?: string }).code).toBe('SQLITE_BUSY');
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(busyTimeoutMs - 5);
    expect(stallMs).toBeLessThan(busyTimeoutMs / 4);
    const { rows } = await sql<{ timeout: number }>`pragma busy_timeout`.execute(handle.db);
    expect(rows[0]?.timeout).toBe(busyTimeoutMs);
  });
});
