import { CompiledQuery, type Kysely } from 'kysely';
import type { Slice } from '../slice.js';
import type { SliceLock } from './slice-lock.js';
import type { Warehouse } from './warehouse-schema.js';

const BEGIN = CompiledQuery.raw('begin');

/**
 * Postgres's {@link SliceLock}: an advisory transaction lock on the slice alone, so slices of
 * different keys load side by side, and the server's clock read in the same round trip. The lock
 * is keyed by a 64-bit hash of the slice, namespaced so that another application's advisory locks
 * are unlikely to meet ours (a collision would only make two slices wait for each other, never mix them).
 */
export class PostgresSliceLock implements SliceLock {
  async begin(connection: Kysely<Warehouse>, slice: Slice): Promise<string> {
    await connection.executeQuery(BEGIN);
    const { rows } = await connection.executeQuery<{ now: Date | string }>(
      CompiledQuery.raw('select pg_advisory_xact_lock(hashtextextended($1, 0)), now() as now', [`report-sync slice ${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`]),
    );
    return new Date(rows[0]!.now).toISOString();
  }
}
