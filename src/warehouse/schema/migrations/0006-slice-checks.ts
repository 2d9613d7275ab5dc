import type { Kysely, Migration } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/**
 * `slice_checks`: the data-quality checks of the latest file checked for each slice, one row per
 * slice and check (a file refused by a check leaves its results here beside the ledger's `failed`).
 * Keyed like the ledger, so a slice's checks are one index range. MySQL's own, see `MigrationDialect.sliceChecks`.
 */
export function sliceChecks(dialect: MigrationDialect): Migration {
  if (dialect.sliceChecks) return dialect.sliceChecks;
  const timestamp = dialect.timestampType;
  const real = dialect.realType;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('slice_checks')
        .addColumn('portfolio_id', 'integer', (c) => c.notNull())
        .addColumn('report_type', 'text', (c) => c.notNull())
        .addColumn('report_date', 'date', (c) => c.notNull())
        .addColumn('check_name', 'text', (c) => c.notNull())
        .addColumn('severity', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('measured', real, (c) => c.notNull())
        .addColumn('threshold', real, (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('checked_at', timestamp, (c) => c.notNull())
        .addPrimaryKeyConstraint('slice_checks_pk', ['portfolio_id', 'report_type', 'report_date', 'check_name'])
        .execute();
      // status and check ask for the misses of a date range: a small part of the table.
      await db.schema.createIndex('slice_checks_date').on('slice_checks').columns(['report_date', 'outcome']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('slice_checks').execute();
    },
  };
}
