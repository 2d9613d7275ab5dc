import { CompiledQuery, sql, type Generated, type Kysely } from 'kysely';
import type { SliceStatus, Warehouse } from '../engine/warehouse-schema.js';

/**
 * The named lock a fold holds: one fold at a time across processes; a writer that cannot take it
 * at once leaves the folding to its holder. Migration 0009 holds it too, while it sums the folded rows.
 */
const TRY_FOLD_LOCK = CompiledQuery.raw("select get_lock('report-sync:report_loads_monthly:fold', 0) as locked");
const RELEASE_FOLD_LOCK = CompiledQuery.raw("do release_lock('report-sync:report_loads_monthly:fold')");

/** The most keys (portfolio, report type, month) one fold takes, so that it stays a short transaction whatever piled up. */
export const FOLD_KEYS = 1_000;

/** Ids deleted, or rows inserted, per statement. */
const ROWS_PER_STATEMENT = 1_000;

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/** MySQL's `report_loads_monthly` with the columns of its appended rows (see `mysqlLedgerRollup`). */
type FoldedTables = Warehouse & { report_loads_monthly: { id: Generated<number>; pending: boolean } };

/** A key and status's rows, summed. */
interface FoldedCount {
  readonly month: string;
  readonly portfolio_id: number;
  readonly report_type: string;
  readonly status: SliceStatus;
  slices: number;
  readonly pending: false;
}

/**
 * Folds the appended rows of `report_loads_monthly` (see `mysqlLedgerRollup`) into one row per
 * key and status, for up to {@link FOLD_KEYS} keys that have rows pending, in a transaction of its
 * own on `connection` (which must be in none); returns how many keys it folded (0 when another
 * session is folding). Only rows other sessions have committed are read (READ COMMITTED), and they
 * are deleted by their ids: the fold never waits on a transaction still appending, and writers
 * never wait on it. The sums are the same folded or not.
 */
export async function foldMonthlyCounts(connection: Kysely<Warehouse>): Promise<number> {
  const db = connection.withTables<FoldedTables>();
  const { rows: lock } = await db.executeQuery<{ locked: number | null }>(TRY_FOLD_LOCK);
  if (Number(lock[0]?.locked) !== 1) return 0;
  try {
    await db.executeQuery(BEGIN);
    try {
      const keyed = db.selectFrom('report_loads_monthly').where('pending', '=', true).select(['month', 'portfolio_id', 'report_type']).distinct().limit(FOLD_KEYS).as('keyed');
      const rows = await db
        .selectFrom('report_loads_monthly as counted')
        .innerJoin(keyed, (join) =>
          join.onRef('counted.month', '=', 'keyed.month').onRef('counted.portfolio_id', '=', 'keyed.portfolio_id').onRef('counted.report_type', '=', 'keyed.report_type'),
        )
        .select(['counted.id', sql<string>`date_format(counted.month, '%Y-%m-%d')`.as('month'), 'counted.portfolio_id', 'counted.report_type', 'counted.status', 'counted.slices'])
        .execute();
      const sums = new Map<string, FoldedCount>();
      for (const row of rows) {
        const key = `${row.month} ${row.portfolio_id} ${row.report_type} ${row.status}`;
        const sum = sums.get(key);
        if (sum) sum.slices += Number(row.slices);
        else
          sums.set(key, { month: row.month, portfolio_id: Number(row.portfolio_id), report_type: row.report_type, status: row.status, slices: Number(row.slices), pending: false });
      }
      const ids = rows.map((row) => Number(row.id));
      for (let at = 0; at < ids.length; at += ROWS_PER_STATEMENT) {
        await db
          .deleteFrom('report_loads_monthly')
          .where('id', 'in', ids.slice(at, at + ROWS_PER_STATEMENT))
          .execute();
      }
      const folded = [...sums.values()].filter((sum) => sum.slices !== 0);
      for (let at = 0; at < folded.length; at += ROWS_PER_STATEMENT) {
        await db
          .insertInto('report_loads_monthly')
          .values(folded.slice(at, at + ROWS_PER_STATEMENT))
          .execute();
      }
      await db.executeQuery(COMMIT);
      return new Set(rows.map((row) => `${row.month} ${row.portfolio_id} ${row.report_type}`)).size;
    } catch (error) {
      await db.executeQuery(ROLLBACK).catch(() => undefined);
      throw error;
    }
  } finally {
    await db.executeQuery(RELEASE_FOLD_LOCK).catch(() => undefined);
  }
}
