import { SyncError } from '../errors/sync-error.js';
import type { SyncMetrics } from '../metrics/sync-metrics.js';
import type { IssuedToken, TokenSource } from './token-source.js';

/**
 * Counts token requests by result and renewals by reason for the metrics: a renewal asked for by a
 * 401 from the export endpoint is a `rejection`, any other token issued after the first an `expiry`.
 */
export class MeteredTokenSource {
  readonly #metrics: SyncMetrics;
  #issued = false;
  #renewingAfterRejection = 0;

  constructor(metrics: SyncMetrics) {
    this.#metrics = metrics;
  }

  /** The password grant, counted. */
  issue(grant: () => Promise<IssuedToken>): () => Promise<IssuedToken> {
    return async () => {
      try {
        const issued = await grant();
        this.#metrics.tokenRequested('issued');
        if (this.#issued) this.#metrics.tokenRenewed(this.#renewingAfterRejection > 0 ? 'rejection' : 'expiry');
        this.#issued = true;
        return issued;
      } catch (error) {
        const code = error instanceof SyncError ? error.code : undefined;
        // A request cut short by the shutdown got no answer to count.
        if (code !== 'INTERRUPTED') this.#metrics.tokenRequested(code === 'AUTH_UNAVAILABLE' ? 'unavailable' : 'rejected');
        throw error;
      }
    };
  }

  /** The token source, noting which renewals a 401 asked for. */
  tokens(source: TokenSource): TokenSource {
    return {
      getToken: () => source.getToken(),
      renewAfterRejection: async (rejected) => {
        this.#renewingAfterRejection += 1;
        try {
          return await source.renewAfterRejection(rejected);
        } finally {
          this.#renewingAfterRejection -= 1;
        }
      },
    };
  }
}
