import { SyncError, type SyncErrorCode } from '../../errors/sync-error.js';

/** A ledger error: `CODE: what to check`. */
const LEDGER_ERROR = /^([A-Z][A-Z0-9_]*): ([\s\S]*)$/;

/** The stable code a ledger error starts with (`CODE: what to check`), or `UNEXPECTED` when it has none. */
export function errorCodeOf(error: string | null): string {
  return LEDGER_ERROR.exec(error ?? '')?.[1] ?? 'UNEXPECTED';
}

/** A failure as the ledger tells it, back as an error (for summaries and alerts). */
export function ledgerError(error: string | null): SyncError {
  const match = LEDGER_ERROR.exec(error ?? '');
  return new SyncError(match ? (match[1] as SyncErrorCode) : 'UNEXPECTED', match ? match[2]! : (error ?? 'no reason recorded'));
}
