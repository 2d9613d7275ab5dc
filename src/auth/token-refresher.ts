import type { IdentityProviderWaitOptions } from './identity-provider-wait-options.js';
import type { IdentityProviderOutage } from './identity-provider-outage.js';
import { issueThroughOutage } from './issue-through-outage.js';
import { scheduleToken, type TokenSchedule } from './token-schedule.js';
import type { IssuedToken, TokenSource } from './token-source.js';

export interface TokenRefresherOptions extends IdentityProviderWaitOptions {
  /** Asks the identity provider for a new token (the password grant). */
  readonly issue: () => Promise<IssuedToken>;
  /** Renew this long before expiry, capped at a tenth of the token's lifetime (see {@link scheduleToken}). @defaultValue 30 */
  readonly refreshMarginSeconds?: number;
  /** Clock in milliseconds, for tests. @defaultValue Date.now */
  readonly now?: () => number;
}

interface CachedToken extends TokenSchedule {
  readonly value: string;
  /** Asked for because the token before it was refused within its lifetime. */
  readonly afterRejection: boolean;
}

/**
 * The in-process token source: caches the token, renews it shortly before expiry, one provider
 * request for all concurrent callers. A 401 renews it unless fresh ({@link TokenSchedule.freshUntil}),
 * so a gateway refusing every token gets one more, not one per slice; outages wait on the renewal.
 */
export class TokenRefresher implements TokenSource {
  readonly #issue: () => Promise<IssuedToken>;
  readonly #marginSeconds: number;
  readonly #now: () => number;
  readonly #options: TokenRefresherOptions;
  #outage: IdentityProviderOutage | undefined;
  #current: CachedToken | undefined;
  #pending: Promise<string> | undefined;

  constructor(options: TokenRefresherOptions) {
    this.#issue = options.issue;
    this.#marginSeconds = options.refreshMarginSeconds ?? 30;
    this.#now = options.now ?? Date.now;
    this.#options = options;
  }

  async getToken(): Promise<string> {
    const current = this.#current;
    if (current && this.#now() < current.renewAt) return current.value;
    return this.#renew();
  }

  async renewAfterRejection(rejected: string): Promise<string> {
    if (this.#pending) return this.#pending;
    const current = this.#current;
    // Already replaced (a burst of 401s renews once), or due anyway: the 401 is its expiry.
    if (!current || current.value !== rejected || this.#now() >= current.renewAt) return this.getToken();
    // Refused within its lifetime right after a 401 asked for it: no new token would fare better.
    if (current.afterRejection && this.#now() < current.freshUntil) return rejected;
    // Refused within its lifetime (revoked, or the gateway forgot it): one new token, marked so.
    this.#current = undefined;
    return this.#renew(true);
  }

  #renew(afterRejection = false): Promise<string> {
    // Every caller that arrives while a request is out waits for that same request.
    this.#pending ??= this.#request(afterRejection).finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #request(afterRejection: boolean): Promise<string> {
    const options = this.#options;
    let askedAt = this.#now();
    const issued = await issueThroughOutage({
      issue: () => {
        // The lifetime counts from the ask that was answered: the provider's clock started then.
        askedAt = this.#now();
        return this.#issue();
      },
      waitMs: options.unavailableWaitMs ?? 300_000,
      baseDelayMs: options.unavailableBaseDelayMs,
      maxDelayMs: options.unavailableMaxDelayMs,
      store: {
        read: async () => this.#outage,
        write: async (outage) => {
          this.#outage = outage;
        },
        clear: async () => {
          this.#outage = undefined;
        },
      },
      onWait: options.onUnavailable,
      onRecovered: options.onRecovered,
      now: this.#now,
      signal: options.signal,
    });
    const schedule = scheduleToken({ askedAt, expiresInSeconds: issued.expiresInSeconds, refreshMarginSeconds: this.#marginSeconds });
    this.#current = { value: issued.accessToken, afterRejection, ...schedule };
    return issued.accessToken;
  }
}
