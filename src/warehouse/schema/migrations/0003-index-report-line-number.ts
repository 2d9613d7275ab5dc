import type { Migration } from 'kysely';
import type { MigrationDialect } from '../../engine/migration-dialect.js';

/**
 * `index_report` gets `line_number` (the record's 1-based position in its file, as
 * `constituent_report` has) and a primary key on (portfolio_id, report_date, line_number), so that
 * a slice loaded twice over can never hold its rows twice: the database refuses it, whatever the
 * loader does. Existing rows are numbered in the order they were stored, which is their file's.
 *
 * A warehouse that already holds a slice twice (two processes loaded it at once before the
 * per-slice lock) keeps both copies, numbered on: its table count then differs from the ledger's
 * `row_count`, which `check --deep` lists and the next sync of the slice repairs by loading it again.
 *
 * SQLite cannot add a primary key to a table, Postgres can: the steps are the dialect's own
 * (`MigrationDialect.indexReportLineNumber`, in each dialect's folder).
 */
export function indexReportLineNumber(dialect: MigrationDialect): Migration {
  return dialect.indexReportLineNumber;
}
