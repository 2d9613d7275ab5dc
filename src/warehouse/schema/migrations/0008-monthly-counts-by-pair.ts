import type { Migration } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/**
 * `report_loads_monthly_pair`, on MySQL only (`MigrationDialect.monthlyCountsByPair`): the
 * monthly counts keyed pair first, beside the month-first key, for `status` over every month
 * counted. SQLite keeps no statistics, and with this index its planner entered a month's counts by
 * the list of portfolios asked, reading every month of them; Postgres answered within a second
 * without it. Elsewhere the migration does nothing, so every warehouse has the same history.
 */
export function monthlyCountsByPair(dialect: MigrationDialect): Migration {
  return dialect.monthlyCountsByPair ?? { up: async () => undefined };
}
