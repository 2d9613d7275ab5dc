import { CompiledQuery, type Kysely } from 'kysely';
import { WarehouseError } from '../../errors/sync-error.js';
import type { Slice } from '../../slice/slice.js';
import type { SliceLock } from '../engine/slice-lock.js';
import type { Warehouse } from '../engine/warehouse-schema.js';
import { foldMonthlyCounts } from './fold-monthly-counts.js';
import { mysqlTimestamp } from './mysql-timestamp.js';
import { HOLDS_SLICE_LOCKS } from './session-mysql-pool.js';

const BEGIN = CompiledQuery.raw('begin');

/** Commits of slices, per open warehouse, between two folds of the ledger's monthly counts (see `foldMonthlyCounts`). */
export const COMMITS_PER_FOLD = 64;

/** How long a slice's lock is waited for before the slice fails, retryably (another process writing it for longer is stuck). */
const LOCK_WAIT_SECONDS = 3_600;

/**
 * The lock and the server's clock in one round trip. The lock's name is a hash of the slice,
 * namespaced, within the 64 characters a lock name may have; the clock is the statement's, in UTC
 * (the session's zone, see `sessionMysqlPool`).
 */
const LOCK_SQL = "select get_lock(concat('report-sync:', sha1(?)), ?) as locked, utc_timestamp(3) as now";

/**
 * MySQL's {@link SliceLock}: a named lock (`GET_LOCK`) per slice, so slices of different keys load
 * side by side and two processes (or hosts) that reach one slice write it one after the other.
 * Named locks belong to the session, not the transaction: the pool releases them right after the
 * COMMIT or ROLLBACK that ends the transaction (see `sessionMysqlPool`), and the server when a
 * killed process's session ends.
 *
 * Every {@link COMMITS_PER_FOLD}th commit is followed by a fold of the ledger's monthly counts
 * (`foldMonthlyCounts`), which keeps the rows its triggers append few; one that fails leaves them
 * to the next.
 */
export class MysqlSliceLock implements SliceLock {
  #commits = 0;

  async begin(connection: Kysely<Warehouse>): Promise<void> {
    await connection.executeQuery(BEGIN);
  }

  async afterCommit(connection: Kysely<Warehouse>): Promise<void> {
    this.#commits += 1;
    if (this.#commits % COMMITS_PER_FOLD === 0) await foldMonthlyCounts(connection);
  }

  async lock(connection: Kysely<Warehouse>, slice: Slice, wait: boolean): Promise<string | undefined> {
    const key = `slice ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`;
    const { rows } = await connection.executeQuery<{ locked: number | null; now: string }>(CompiledQuery.raw(LOCK_SQL, [HOLDS_SLICE_LOCKS, key, wait ? LOCK_WAIT_SECONDS : 0]));
    const row = rows[0]!;
    if (Number(row.locked) === 1) return mysqlTimestamp(row.now);
    if (!wait) return undefined;
    throw new WarehouseError(
      'WAREHOUSE_UNAVAILABLE',
      `waited ${LOCK_WAIT_SECONDS} s for the lock of slice ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}, which another session holds: ` +
        'a process writing it is stuck (SHOW PROCESSLIST shows it)',
    );
  }
}
