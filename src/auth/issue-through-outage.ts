import { setTimeout as sleep } from 'node:timers/promises';
import { AuthError, SyncError } from '../errors/sync-error.js';
import { RetryPolicy } from '../retry/retry-policy.js';
import type { IdentityProviderOutage, OutageStore } from './identity-provider-outage.js';
import type { IssuedToken } from './token-source.js';

/** A wait for the identity provider, as reported before it starts (a warning in the log). */
export interface OutageWait {
  readonly code: string;
  /** What the provider's last answer was (logged under `err`, so its causes are too). */
  readonly err: SyncError;
  /** How long the provider has been unavailable so far. */
  readonly outageMs: number;
  readonly failures: number;
  /** How long until it is asked again. */
  readonly delayMs: number;
}

export interface IssueThroughOutageOptions {
  /** One token request (the password grant). */
  readonly issue: () => Promise<IssuedToken>;
  /** Longest outage waited through (`token.unavailableWaitMs`); 0 fails at the first unavailable answer. */
  readonly waitMs: number;
  readonly store: OutageStore;
  /** First delay between two requests to an unavailable provider; it doubles, with jitter. @defaultValue 1000 */
  readonly baseDelayMs?: number;
  /** @defaultValue 30000 */
  readonly maxDelayMs?: number;
  /** Called before every wait: to log it, or to keep a renewal lock alive through it. */
  readonly onWait?: (wait: OutageWait) => Promise<void> | void;
  /** Called once the provider answers again after an outage. */
  readonly onRecovered?: (outageMs: number) => void;
  /** @defaultValue Date.now */
  readonly now?: () => number;
  /** @defaultValue Math.random */
  readonly random?: () => number;
  /** A shutdown: the wait ends at once with `INTERRUPTED`. */
  readonly signal?: AbortSignal;
}

/**
 * Asks for a token, waiting through an outage (`AUTH_UNAVAILABLE`) up to `waitMs` with backoff.
 * Only the renewal's holder calls this, so the provider sees one request per backoff step.
 * `AUTH_REJECTED` is thrown at once; past `waitMs` callers fail at once while probing continues.
 */
export async function issueThroughOutage(options: IssueThroughOutageOptions): Promise<IssuedToken> {
  const now = options.now ?? Date.now;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  // A Retry-After from the provider is honoured, but never beyond the backoff's ceiling; and only
  // the renewal's holder asks, so there is no crowd to spread out.
  const policy = new RetryPolicy({ baseDelayMs: options.baseDelayMs ?? 1_000, maxDelayMs, spreadRetryAfter: false, random: options.random });
  for (;;) {
    if (options.signal?.aborted) throw new SyncError('INTERRUPTED', 'stopped before asking the identity provider; the slice is left as it was');
    let outage = await options.store.read();
    // Nobody has asked for a while: whatever the provider did then, this is a new outage (or none).
    if (outage && now() - outage.lastFailureAt > Math.max(options.waitMs, maxDelayMs)) outage = undefined;
    if (outage?.givenUp && now() < outage.nextAskAt) throw givenUpError(outage, options.waitMs, now());

    let issued: IssuedToken;
    const askedAt = now();
    try {
      issued = await options.issue();
    } catch (error) {
      if (!(error instanceof SyncError) || error.code !== 'AUTH_UNAVAILABLE') throw error;
      const at = now();
      const failures = (outage?.failures ?? 0) + 1;
      // A request that hung until token.requestTimeoutMs counts from when it was sent: the outage
      // began then, and the wait it adds stays within waitMs.
      const startedAt = outage?.startedAt ?? askedAt;
      const delayMs = policy.delayMs(failures, error.retryAfterMs);
      const givenUp = at - startedAt >= options.waitMs;
      const next: IdentityProviderOutage = { startedAt, lastFailureAt: at, failures, nextAskAt: at + delayMs, givenUp, lastError: error.message };
      await options.store.write(next);
      if (givenUp) throw givenUpError(next, options.waitMs, at, error);
      // Ask once more right at the deadline rather than sleeping past it.
      const sleepMs = Math.max(0, Math.min(delayMs, startedAt + options.waitMs - at));
      await options.onWait?.({ code: error.code, err: error, outageMs: at - startedAt, failures, delayMs: sleepMs });
      await interruptibleSleep(sleepMs, options.signal);
      continue;
    }
    if (outage) {
      await options.store.clear();
      options.onRecovered?.(now() - outage.startedAt);
    }
    return issued;
  }
}

/** Sleeps, unless a shutdown comes first: then `INTERRUPTED`, so that no slice waits out an outage on its way down. */
export async function interruptibleSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    if (signal?.aborted) throw new SyncError('INTERRUPTED', 'stopped while waiting for the identity provider; the slice is left as it was', { cause: error });
    throw error;
  }
}

function givenUpError(outage: IdentityProviderOutage, waitMs: number, at: number, cause?: unknown): AuthError {
  const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
  return new AuthError(
    'AUTH_UNAVAILABLE',
    `identity provider unavailable for ${seconds(at - outage.startedAt)}, longer than token.unavailableWaitMs (${seconds(waitMs)}); ` +
      `last answer: ${outage.lastError}. Check the identity provider (REPORT_AUTH_URL or REPORT_TOKEN_URL); ` +
      'once it answers, re-run the failed slices (run again, or backfill --only-missing)',
    { cause },
  );
}
