/** How a {@link RetryPolicy} spaces attempts. */
export interface RetryPolicyOptions {
  /** The wait after the first failure; it doubles with every further failure, up to `maxDelayMs`. */
  readonly baseDelayMs: number;
  /** The longest backoff wait. */
  readonly maxDelayMs: number;
  /** The longest Retry-After honoured; a longer one is cut to this. @defaultValue maxDelayMs */
  readonly maxRetryAfterMs?: number;
  /**
   * Add a little jitter to a Retry-After (up to 10% of it, at most 1 s), so that many callers told
   * the same moment do not all come back at once. Off where one caller asks for everybody (the
   * identity-provider wait holds the renewal lock). @defaultValue true
   */
  readonly spreadRetryAfter?: boolean;
  /** @defaultValue Math.random */
  readonly random?: () => number;
}
