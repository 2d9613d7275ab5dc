import type { SyncErrorCode } from '../../src/errors/sync-error.js';
import type { QueueAction } from '../../src/queue/queue-job.js';
import type { ExportSliceResult } from './handler.js';

/**
 * Trouble every job would meet the same way until the upstream accepts again: the identity provider
 * refusing the credentials, or the export endpoint refusing a token that renewing did not cure.
 */
const CREDENTIAL_TROUBLE: ReadonlySet<SyncErrorCode> = new Set<SyncErrorCode>(['AUTH_REJECTED', 'EXPORT_UNAUTHORIZED']);

export interface ExportSliceQueueLimits {
  /** `retry.maxRetryAfterMs`: the longest a 429's Retry-After pauses the queue. */
  readonly maxRetryAfterMs: number;
  /** `token.rejectedRetryMs`: how long a job refused for its credentials waits before it is offered again. */
  readonly credentialsRetryMs: number;
}

/**
 * What the queue does with an export job's result: final failures are not retried; retryable ones
 * spend an attempt with the in-process backoff; a 429 pauses the queue; a shutdown or credential
 * trouble puts the job back unspent, the latter pausing the worker too, because an upstream answer
 * misjudged once must not stop the fleet.
 */
export function exportSliceQueueAction(result: ExportSliceResult, limits: ExportSliceQueueLimits): QueueAction {
  if (result.kind === 'died') return { kind: 'fail', reason: `${result.error.code}: ${result.error.message}` };
  const { outcome } = result;
  if (outcome.status !== 'failed') {
    return { kind: 'complete', value: { status: outcome.status, rows: outcome.status === 'loaded' ? outcome.rowCount : 0 } };
  }
  const { error } = outcome;
  if (error.code === 'INTERRUPTED') return { kind: 'put-back', delayMs: 0 };
  if (CREDENTIAL_TROUBLE.has(error.code)) return { kind: 'pause-for-credentials', error, slice: outcome.slice, delayMs: limits.credentialsRetryMs };
  if (outcome.final) return { kind: 'fail', reason: `${error.code}: ${error.message}`, stopWorker: error.fatal ? error : undefined };
  if (error.code === 'EXPORT_RATE_LIMITED' && error.retryAfterMs !== undefined) {
    return { kind: 'rate-limit', pauseMs: Math.min(error.retryAfterMs, limits.maxRetryAfterMs), slice: outcome.slice };
  }
  return { kind: 'retry', error, stopWorker: error.fatal };
}
