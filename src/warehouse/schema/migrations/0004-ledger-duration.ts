import type { Kysely, Migration } from 'kysely';

/**
 * How long the attempt that reached a slice's latest outcome took, in milliseconds, from its start
 * (token, request) to the ledger write: the measured figure a dry run estimates from. Rows written
 * before have none (null), and are left out of the mean.
 */
export function ledgerDuration(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('report_loads').addColumn('duration_ms', 'integer').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('report_loads').dropColumn('duration_ms').execute();
    },
  };
}
