/**
 * What is known about the identity provider being unavailable, shared by every caller that needs
 * a token: in process memory for one process, in Redis for a fleet. Absent while it answers.
 */
export interface IdentityProviderOutage {
  /** When the first failed request of this outage was answered (ms since the epoch). */
  readonly startedAt: number;
  readonly lastFailureAt: number;
  /** Failed requests so far; the backoff between them grows with it. */
  readonly failures: number;
  /** Nobody asks the provider again before this; callers that have given up fail at once until then. */
  readonly nextAskAt: number;
  /** The outage has lasted longer than `token.unavailableWaitMs`: callers fail instead of waiting. */
  readonly givenUp: boolean;
  /** The last failure, as the password grant reported it (no secrets: it never includes them). */
  readonly lastError: string;
}

/** Where an {@link IdentityProviderOutage} is kept between token requests. */
export interface OutageStore {
  read(): Promise<IdentityProviderOutage | undefined>;
  write(outage: IdentityProviderOutage): Promise<void>;
  clear(): Promise<void>;
}
