import type { TokenSchedule } from './token-schedule.js';

/**
 * Where export requests get their bearer token. One instance is shared by every job of a
 * process (the in-memory {@link TokenRefresher}) or of a fleet (a Redis-backed source).
 */
export interface TokenSource {
  /** A token that is not about to expire; requests a new one only when needed. */
  getToken(): Promise<string>;
  /**
   * The export endpoint answered 401 to `rejected`. Returns the token to retry with: the current
   * one when `rejected` was already replaced (a burst of 401s renews once), a new one when its
   * stated lifetime is over (or nearly: it was due) or it was refused within it for the first time.
   * Returns `rejected` itself when it is fresh: asked for because of a 401 moments ago and refused
   * in turn, within the first half of its lifetime (see {@link TokenSchedule.freshUntil}). That is a
   * configuration problem, which more tokens would not solve; the caller reports it.
   */
  renewAfterRejection(rejected: string): Promise<string>;
}

/** A token as the identity provider issued it. */
export interface IssuedToken {
  readonly accessToken: string;
  /** `expires_in` as the server gave it; never assumed. */
  readonly expiresInSeconds: number;
}
