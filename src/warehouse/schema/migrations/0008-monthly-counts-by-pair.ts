import type { Kysely, Migration } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/**
 * `report_loads_monthly_pair`: the monthly counts keyed pair first (portfolio, report type, status,
 * month, slices), beside the month-first key. `status` over every month the counts hold groups
 * them per pair; through the month-first key MariaDB did that in a temporary table of every row
 * (seconds over ten years of thousands of pairs), through this index in its order, reading the
 * index alone. The same index on every dialect, so each engine's planner may choose it.
 */
export function monthlyCountsByPair(dialect: MigrationDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('report_loads_monthly_pair').on('report_loads_monthly').columns(['portfolio_id', 'report_type', 'status', 'month', 'slices']).execute();
    },
    async down(db: Kysely<unknown>) {
      const drop = db.schema.dropIndex('report_loads_monthly_pair');
      await (dialect.indexNamedInTable ? drop.on('report_loads_monthly') : drop).execute();
    },
  };
}
