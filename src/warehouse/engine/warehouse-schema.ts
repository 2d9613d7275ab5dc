import type { RegisteredReport } from '../../reports/report-registry.js';
import type { ReportRow } from '../../reports/report-row.js';

/** The latest outcome of a slice. */
export type SliceStatus = 'loaded' | 'no_data' | 'failed';

export const SLICE_STATUSES: readonly SliceStatus[] = ['loaded', 'no_data', 'failed'];

/**
 * A row of `report_loads`, the ledger: one per slice ever attempted. `row_count`, `format`,
 * `file_name`, `bytes` and `content_sha256` describe the rows the warehouse holds for the slice,
 * so a failure after an earlier load keeps them (the earlier rows are kept too).
 */
export interface ReportLoadsRow {
  portfolio_id: number;
  report_type: string;
  report_date: string;
  status: SliceStatus;
  row_count: number;
  format: string | null;
  file_name: string | null;
  bytes: number | null;
  content_sha256: string | null;
  /** Attempts it took to reach the latest outcome. */
  attempts: number;
  /** Why the latest attempt failed (`CODE: what to check`); null unless `status` is `failed`. */
  error: string | null;
  /** The stable code `error` starts with (`EXPORT_FORBIDDEN`, `FILE_INVALID`…); null unless `status` is `failed`. */
  error_code: string | null;
  /** When the slice was first loaded with rows (ISO 8601, UTC). */
  first_loaded_at: string | null;
  /** When the outcome or the rows last changed. */
  updated_at: string;
  /** When the slice was last fetched, whether or not anything changed. */
  checked_at: string;
  /** How long the latest attempt took, start to ledger write (ms); null when written before this was kept. */
  duration_ms: number | null;
  /**
   * The load that wrote the rows the warehouse holds for the slice (a UUID, also on each of those
   * rows); null when it holds none written by a load (`no_data`, or never loaded). A failure, or
   * the same file again, keeps it, as they keep the rows.
   */
  load_id: string | null;
  /** When that load wrote them (the warehouse's clock); null with `load_id`, and on slices loaded before migration 0005 whose latest attempt had failed. */
  loaded_at: string | null;
}

/**
 * A row of `slice_checks`: one data-quality check of the latest file checked for a slice (see
 * `SliceCheckResult`). `measured` above `threshold` is a miss (for `effectiveDate`, a negative
 * `measured` too: a date after the report date).
 */
export interface SliceChecksRow {
  portfolio_id: number;
  report_type: string;
  report_date: string;
  /** The check's setting under `checks`: `weightsSum`, `duplicateIsin`, `rowCountDrop`, `effectiveDate`, `positiveValues`. */
  check_name: string;
  /** What a miss does: `fail` or `warn`. */
  severity: string;
  /** `pass`, `warn` or `fail`. */
  outcome: string;
  measured: number;
  threshold: number;
  message: string;
  /** When the file was checked (the warehouse's clock, as the ledger's `checked_at`). */
  checked_at: string;
}

/**
 * A row of `report_loads_monthly`: ledger rows of one portfolio, report type, month and status,
 * counted by triggers on the ledger (migration 0007). Postgres may hold several rows of a key
 * until it folds them: always sum `slices` per key.
 */
export interface ReportLoadsMonthlyRow {
  /** The month's first day. */
  month: string;
  portfolio_id: number;
  report_type: string;
  status: SliceStatus;
  slices: number;
}

/**
 * The warehouse as Kysely sees it: every report table of the registry with the row type its
 * definition derives (`index_report: IndexReportRow`…), and the ledger. Decimal columns are
 * written as exact text.
 */
export type Warehouse = { [Definition in RegisteredReport as Definition['table']]: ReportRow<Definition> } & {
  report_loads: ReportLoadsRow;
  slice_checks: SliceChecksRow;
  report_loads_monthly: ReportLoadsMonthlyRow;
};
