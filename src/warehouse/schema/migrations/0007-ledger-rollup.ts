import type { Migration } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/**
 * `report_loads_monthly`: the ledger's slices counted per portfolio, report type, month (its first
 * day) and status, kept by triggers on `report_loads` in the transaction of every write to it
 * (the slice loader's, a restore, a row deleted by hand), and filled from the ledger here.
 * `status`, `check` and the coverage views count whole months from it and read the ledger only
 * for the days of a range's partial months, so they cost the same over ten years as over one.
 *
 * The triggers differ in kind between the dialects (`MigrationDialect.ledgerRollup`): SQLite has
 * one writer, and counts each row in place. Postgres has many, whose group transactions would
 * wait for (and deadlock on) one another's counts: each write appends its change as a row of its
 * own, and now and then one that can take an advisory lock folds the appended rows into one per
 * key. Readers sum `slices` per key in both. A re-check that changes no status counts nothing.
 */
export function ledgerRollup(dialect: MigrationDialect): Migration {
  return dialect.ledgerRollup;
}
