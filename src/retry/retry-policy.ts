import type { RetryPolicyOptions } from './retry-policy-options.js';

/**
 * The product's one retry-wait rule (slice attempts, queue worker, identity-provider wait): honour
 * Retry-After up to `maxRetryAfterMs`, else exponential backoff from `baseDelayMs` up to `maxDelayMs`
 * with equal jitter: the fixed half keeps a struggling service from being asked again at once, the
 * random half keeps a fleet from asking in step.
 */
export class RetryPolicy {
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #maxRetryAfterMs: number;
  readonly #spreadRetryAfter: boolean;
  readonly #random: () => number;

  constructor(options: RetryPolicyOptions) {
    this.#baseDelayMs = Math.max(0, options.baseDelayMs);
    this.#maxDelayMs = Math.max(0, options.maxDelayMs);
    this.#maxRetryAfterMs = Math.max(0, options.maxRetryAfterMs ?? options.maxDelayMs);
    this.#spreadRetryAfter = options.spreadRetryAfter ?? true;
    this.#random = options.random ?? Math.random;
  }

  /**
   * The wait (whole milliseconds) after `failures` failures in a row (1 after the first), or as
   * long as `retryAfterMs` says when the other end said.
   */
  delayMs(failures: number, retryAfterMs?: number): number {
    if (retryAfterMs !== undefined) {
      const asked = Math.min(Math.max(0, retryAfterMs), this.#maxRetryAfterMs);
      return Math.round(this.#spreadRetryAfter ? asked + this.#random() * Math.min(1_000, asked * 0.1) : asked);
    }
    const exponential = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** (failures - 1));
    return Math.round(exponential / 2 + (this.#random() * exponential) / 2);
  }
}
