import { CompiledQuery, type Kysely } from 'kysely';
import type { Slice } from '../../slice/slice.js';
import type { SliceLock } from '../engine/slice-lock.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

const BEGIN = CompiledQuery.raw('begin');

/**
 * Postgres's {@link SliceLock}: an advisory transaction lock on the slice alone, so slices of
 * different keys load side by side, and the server's clock read in the same round trip. The lock
 * is keyed by a 64-bit hash of the slice, namespaced so that another application's advisory locks
 * are unlikely to meet ours (a collision would only make two slices wait for each other, never mix them).
 *
 * The clock is the statement's time, not `now()` (the transaction's start): a transaction holds
 * several slices, begun before the later ones were even taken from the queue, and a `backfill
 * --wait` counts only outcomes stamped after it started.
 */
export class PostgresSliceLock implements SliceLock {
  async begin(connection: Kysely<Warehouse>): Promise<void> {
    await connection.executeQuery(BEGIN);
  }

  async lock(connection: Kysely<Warehouse>, slice: Slice, wait: boolean): Promise<string | undefined> {
    const key = `report-sync slice ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`;
    if (wait) {
      const { rows } = await connection.executeQuery<{ now: Date | string }>(
        CompiledQuery.raw('select pg_advisory_xact_lock(hashtextextended($1, 0)), statement_timestamp() as now', [key]),
      );
      return new Date(rows[0]!.now).toISOString();
    }
    const { rows } = await connection.executeQuery<{ locked: boolean; now: Date | string }>(
      CompiledQuery.raw('select pg_try_advisory_xact_lock(hashtextextended($1, 0)) as locked, statement_timestamp() as now', [key]),
    );
    return rows[0]!.locked ? new Date(rows[0]!.now).toISOString() : undefined;
  }
}
