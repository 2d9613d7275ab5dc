import type { Migration } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/**
 * `report_loads_monthly_totals`, on MySQL only (`MigrationDialect.monthlyTotals`): the monthly
 * counts summed over every portfolio, per month, report type and status, for `check`'s count per
 * month over ten years, which MariaDB otherwise sums from every pair's monthly rows. SQLite and
 * Postgres answer that within a second from the monthly counts. Elsewhere the migration does
 * nothing, so every warehouse has the same history.
 */
export function monthlyTotals(dialect: MigrationDialect): Migration {
  return dialect.monthlyTotals ?? { up: async () => undefined };
}
