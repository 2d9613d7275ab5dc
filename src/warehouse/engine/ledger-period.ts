/** How the ledger's counts by period (`Ledger.countByPeriod`) bucket dates. */
export type LedgerPeriod = 'day' | 'week' | 'month';
