import type { TokenSchedule } from './token-schedule.js';

/**
 * Where export requests get their bearer token. One instance is shared by every job of a
 * process (the in-memory {@link TokenRefresher}) or of a fleet (a Redis-backed source).
 */
export interface TokenSource {
  /** A token that is not about to expire; requests a new one only when needed. */
  getToken(): Promise<string>;
  /**
   * The export endpoint answered 401 to `rejected`: returns the token to retry with (a burst of
   * 401s renews once). Returns `rejected` itself when fresh ({@link TokenSchedule.freshUntil}):
   * a configuration problem more tokens would not solve, which the caller reports.
   */
  renewAfterRejection(rejected: string): Promise<string>;
}

/** A token as the identity provider issued it. */
export interface IssuedToken {
  readonly accessToken: string;
  /** `expires_in` as the server gave it; never assumed. */
  readonly expiresInSeconds: number;
}
