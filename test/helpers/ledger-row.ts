import type { Kysely } from 'kysely';
import type { Slice } from '../../src/slice/slice.js';
import type { ReportLoadsRow, SliceStatus, Warehouse } from '../../src/warehouse/engine/warehouse-schema.js';

/**
 * A ledger row for seeding a warehouse in tests: 3 rows when loaded, a failure's `error` (its code
 * before the colon also in `error_code`), checked and changed at `at`.
 */
export function ledgerRow(
  portfolioId: number,
  reportType: string,
  reportDate: string,
  status: SliceStatus,
  options: { readonly error?: string; readonly at?: string } = {},
): ReportLoadsRow {
  const error = status === 'failed' ? (options.error ?? 'EXPORT_FORBIDDEN: no entitlement') : null;
  const at = options.at ?? '2024-03-05T00:00:00.000Z';
  return {
    portfolio_id: portfolioId,
    report_type: reportType,
    report_date: reportDate,
    status,
    row_count: status === 'loaded' ? 3 : 0,
    format: 'json',
    file_name: null,
    bytes: 10,
    content_sha256: null,
    attempts: 1,
    error,
    error_code: error ? error.split(':')[0]! : null,
    first_loaded_at: null,
    updated_at: at,
    checked_at: at,
    duration_ms: status === 'failed' ? null : 1500,
    load_id: null,
    loaded_at: null,
  };
}

/** A slice's ledger row as a transaction writes it in the commit-group tests: loaded, no rows, stamped `now`. */
export async function insertLoadedLedgerRow(trx: Kysely<Warehouse>, slice: Slice, now: string): Promise<void> {
  await trx
    .insertInto('report_loads')
    .values({
      portfolio_id: slice.portfolioId,
      report_type: slice.reportType,
      report_date: slice.reportDate,
      status: 'loaded',
      row_count: 0,
      attempts: 1,
      updated_at: now,
      checked_at: now,
    })
    .execute();
}
