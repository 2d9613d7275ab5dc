import type { IncomingHttpHeaders } from 'node:http';
import { ExportError, type SyncErrorCode } from '../errors/sync-error.js';
import { describeSlice, type Slice } from '../slice/slice.js';
import { parseRetryAfter } from '../http/parse-retry-after.js';

/** The spec's error table, with what to check for each status. */
const KNOWN_STATUSES: Record<number, { code: SyncErrorCode; meaning: string; action: string }> = {
  400: {
    code: 'EXPORT_BAD_REQUEST',
    meaning: 'Bad Request',
    action: 'check the parameters (report type, date, format) and the request format',
  },
  403: {
    code: 'EXPORT_FORBIDDEN',
    meaning: 'Forbidden',
    action: 'verify REPORT_TENANT_ID and that the account may read this portfolio',
  },
  404: {
    code: 'EXPORT_NOT_FOUND',
    meaning: 'Not Found',
    action: 'check the portfolio id and REPORT_BASE_URL (the export path)',
  },
  429: { code: 'EXPORT_RATE_LIMITED', meaning: 'Too Many Requests', action: 'it is retried after the delay the service asked for' },
};

/** Turns a non-200, non-401 answer of the export endpoint into a classified error. */
export function classifyExportStatus(status: number, headers: IncomingHttpHeaders, bodyText: string, slice: Slice): ExportError {
  const retryAfterMs = parseRetryAfter(headers['retry-after']);
  const detail = summarise(bodyText);
  const known = KNOWN_STATUSES[status];
  if (known) {
    return new ExportError(known.code, `export endpoint answered ${status} ${known.meaning} for ${describeSlice(slice)}: ${known.action}${detail}`, { status, retryAfterMs });
  }
  if (status >= 500) {
    return new ExportError('EXPORT_SERVER_ERROR', `export endpoint answered ${status} for ${describeSlice(slice)}: server-side trouble, retried after a delay${detail}`, {
      status,
      retryAfterMs,
    });
  }
  const location = headers.location ? ` (redirect to ${String(headers.location)}; check REPORT_BASE_URL)` : '';
  return new ExportError('EXPORT_REJECTED', `export endpoint answered ${status} for ${describeSlice(slice)}${location}${detail}`, {
    status,
  });
}

/** A short, single-line quote of an error body, so the ledger says what the service said. */
function summarise(bodyText: string): string {
  const text = bodyText.replace(/\s+/g, ' ').trim();
  if (text === '') return '';
  return ` [service said: ${text.length > 300 ? `${text.slice(0, 300)}…` : text}]`;
}
