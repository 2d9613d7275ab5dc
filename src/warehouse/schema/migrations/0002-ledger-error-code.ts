import { errorCodeOf } from '../ledger-error.js';
import type { Kysely, Migration } from 'kysely';

/** Rows of the ledger whose code is filled in per statement while migrating. */
const BACKFILL_BATCH = 500;

/**
 * The ledger's failure code in a column of its own (`EXPORT_FORBIDDEN`, `FILE_INVALID`…), the
 * text before the first colon of `error`, so that failures can be grouped by code in SQL however
 * many there are. Existing failed rows get theirs from their `error`.
 */
export function ledgerErrorCode(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('report_loads').addColumn('error_code', 'text').execute();
      const ledger = db as unknown as Kysely<{
        report_loads: { portfolio_id: number; report_type: string; report_date: string; status: string; error: string | null; error_code: string | null };
      }>;
      for (;;) {
        const rows = await ledger
          .selectFrom('report_loads')
          .select(['portfolio_id', 'report_type', 'report_date', 'error'])
          .where('status', '=', 'failed')
          .where('error_code', 'is', null)
          .limit(BACKFILL_BATCH)
          .execute();
        if (rows.length === 0) return;
        for (const row of rows) {
          await ledger
            .updateTable('report_loads')
            .set({ error_code: errorCodeOf(row.error) })
            .where('portfolio_id', '=', row.portfolio_id)
            .where('report_type', '=', row.report_type)
            .where('report_date', '=', row.report_date)
            .execute();
        }
      }
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('report_loads').dropColumn('error_code').execute();
    },
  };
}
