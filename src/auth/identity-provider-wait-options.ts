import type { Settings } from '../config/settings-schema.js';
import type { Logger } from '../logging/logger.js';
import type { SyncMetrics } from '../metrics/sync-metrics.js';
import type { OutageWait } from './issue-through-outage.js';

/** How a token source waits through an identity-provider outage; both token sources take these. */
export interface IdentityProviderWaitOptions {
  /**
   * Longest identity-provider outage (5xx, 429, refused connections) callers wait through before
   * failing with `AUTH_UNAVAILABLE`. @defaultValue 300000
   */
  readonly unavailableWaitMs?: number;
  /** First delay between requests to an unavailable provider, doubling with jitter. @defaultValue 1000 */
  readonly unavailableBaseDelayMs?: number;
  /** @defaultValue 30000 */
  readonly unavailableMaxDelayMs?: number;
  /** Told before every wait for the provider (to log a warning). */
  readonly onUnavailable?: (wait: OutageWait) => void;
  /** Told when the provider answers again after an outage. */
  readonly onRecovered?: (outageMs: number) => void;
  /** A shutdown: waits for the provider end at once with `INTERRUPTED`, leaving the slices as they were. */
  readonly signal?: AbortSignal;
}

/**
 * The outage options both token sources take, from `token.*` settings, with a warning in the log
 * before every wait for the provider and a line when it answers again, so an operator watching
 * a stalled run sees why it is stalled and for how long it will wait.
 */
export function identityProviderWaitOptions(token: Settings['token'], logger: Logger, signal?: AbortSignal, metrics?: SyncMetrics): IdentityProviderWaitOptions {
  return {
    unavailableWaitMs: token.unavailableWaitMs,
    signal,
    onUnavailable: (wait) => {
      metrics?.identityProviderWaited();
      logger.warn(
        { ...wait, waitLimitMs: token.unavailableWaitMs },
        `identity provider unavailable: jobs wait for it (up to token.unavailableWaitMs) and ask again in ${Math.round(wait.delayMs / 100) / 10} s`,
      );
    },
    onRecovered: (outageMs) => logger.info({ outageMs }, 'identity provider answers again; jobs go on'),
  };
}
