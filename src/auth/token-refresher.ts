import type { IdentityProviderWaitOptions } from './identity-provider-wait-options.js';
import type { IdentityProviderOutage } from './identity-provider-outage.js';
import { issueThroughOutage } from './issue-through-outage.js';
import type { IssuedToken, TokenSource } from './token-source.js';

export interface TokenRefresherOptions extends IdentityProviderWaitOptions {
  /** Asks the identity provider for a new token (the password grant). */
  readonly issue: () => Promise<IssuedToken>;
  /** Renew this long before expiry, capped at a tenth of the token's lifetime. @defaultValue 30 */
  readonly refreshMarginSeconds?: number;
  /**
   * `token.minRenewalIntervalMs`: at most one new token per this interval is asked for because of
   * a 401; within it, {@link TokenRefresher.renewAfterRejection} returns the refused token itself
   * (the export client then reports `EXPORT_UNAUTHORIZED`). @defaultValue 60000
   */
  readonly minRenewalIntervalMs?: number;
  /** Clock in milliseconds, for tests. @defaultValue Date.now */
  readonly now?: () => number;
}

interface CachedToken {
  readonly value: string;
  /** When to stop handing it out: expiry less the safety margin. */
  readonly renewAt: number;
}

/**
 * The in-process token source: caches the token, renews it shortly before it expires, and
 * makes sure concurrent callers share one request to the identity provider (single flight).
 * While the provider is unavailable, the one renewal in flight waits for it (see
 * {@link issueThroughOutage}) and every caller waits on that renewal, so no slice spends its
 * attempts on an outage shorter than `unavailableWaitMs`.
 */
export class TokenRefresher implements TokenSource {
  readonly #issue: () => Promise<IssuedToken>;
  readonly #marginSeconds: number;
  readonly #now: () => number;
  readonly #options: TokenRefresherOptions;
  #outage: IdentityProviderOutage | undefined;
  #current: CachedToken | undefined;
  #pending: Promise<string> | undefined;
  /** When a 401 last made this process ask for a new token. */
  #renewedAfterRejectionAt: number | undefined;

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
    if (current && current.value !== rejected) return this.getToken();
    // Due for renewal anyway: the 401 is its expiry, and renewing it is not one more token per 401.
    if (current && this.#now() >= current.renewAt) return this.getToken();
    const now = this.#now();
    const last = this.#renewedAfterRejectionAt;
    // A gateway that refuses every token (wrong tenant, client or permissions) must not be answered
    // with a token per burst of slices: the refused token is handed back, and the slice fails.
    if (current && last !== undefined && now - last < (this.#options.minRenewalIntervalMs ?? 60_000)) return rejected;
    this.#renewedAfterRejectionAt = now;
    this.#current = undefined;
    return this.#renew();
  }

  #renew(): Promise<string> {
    // Every caller that arrives while a request is out waits for that same request.
    this.#pending ??= this.#request().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #request(): Promise<string> {
    // Count the lifetime from when we asked, not when the answer came: the server's clock started first.
    const options = this.#options;
    let askedAt = this.#now();
    const issued = await issueThroughOutage({
      issue: () => {
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
    const lifetimeMs = issued.expiresInSeconds * 1000;
    const marginMs = Math.min(this.#marginSeconds * 1000, lifetimeMs / 10);
    this.#current = { value: issued.accessToken, renewAt: askedAt + lifetimeMs - marginMs };
    return issued.accessToken;
  }
}
