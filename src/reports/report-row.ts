import type { ReportDefinition } from './report-definition.js';
import type { ReportType } from './report-types.js';

/**
 * A report table's row, derived from its definition: slice columns, `line_number` and `report_type`
 * where stored, typed columns as text (key columns never null), `extra` and `load_id`. Derived only
 * here, so a new column reaches the row type, Kysely schema and schema check at once.
 */
export type ReportRow<Definition extends ReportDefinition> = Flat<
  SliceColumns<Definition> & { [Column in Definition['columns'][number] as Column['name']]: Column extends { readonly key: true } ? string : string | null } & ExtraColumn &
    LoadIdColumn
>;

type SliceColumns<Definition extends ReportDefinition> = { portfolio_id: number; report_date: string } & (Definition['storesReportType'] extends true
  ? { report_type: ReportType }
  : unknown) &
  (Definition['storesLineNumber'] extends true
    ? {
        /** The record's 1-based position in its file. */
        line_number: number;
      }
    : unknown);

interface ExtraColumn {
  /**
   * JSON object of the fields the spec does not list, under their source names; null when none.
   * `jsonb` in Postgres (read back as its text: jsonb's spacing and key order), text in SQLite.
   */
  extra: string | null;
}

interface LoadIdColumn {
  /**
   * The load that wrote the row: the `load_id` of its slice's ledger row (a UUID). Null only on
   * rows an older release wrote whose slice the ledger did not record as loaded (migration 0005).
   */
  load_id: string | null;
}

/** One object type rather than an intersection, so editors and errors show the row's columns. */
type Flat<T> = { [Key in keyof T]: T[Key] };
