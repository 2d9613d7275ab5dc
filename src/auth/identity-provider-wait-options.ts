import type { Settings } from '../config/settings-schema.js';
import type { Logger } from '../logger.js';
import type { OutageWait } from './issue-through-outage.js';

/**
 * The outage options both token sources take, from `token.*` settings, with a warning in the log
 * before every wait for the provider and a line when it answers again, so an operator watching
 * a stalled run sees why it is stalled and for how long it will wait.
 */
export function identityProviderWaitOptions(
  token: Settings['token'],
  logger: Logger,
): { unavailableWaitMs: number; onUnavailable: (wait: OutageWait) => void; onRecovered: (outageMs: number) => void } {
  return {
    unavailableWaitMs: token.unavailableWaitMs,
    onUnavailable: (wait) =>
      logger.warn(
        { ...wait, waitLimitMs: token.unavailableWaitMs },
        `identity provider unavailable: jobs wait for it (up to token.unavailableWaitMs) and ask again in ${Math.round(wait.delayMs / 100) / 10} s`,
      ),
    onRecovered: (outageMs) => logger.info({ outageMs }, 'identity provider answers again; jobs go on'),
  };
}
