/**
 * Where export requests get their bearer token. One instance is shared by every job of a
 * process (the in-memory {@link TokenRefresher}) or of a fleet (a Redis-backed source).
 */
export interface TokenSource {
  /** A token that is not about to expire; requests a new one only when needed. */
  getToken(): Promise<string>;
  /**
   * The export endpoint answered 401 to `rejected`. Returns the token to retry with: a new one,
   * unless another caller has already replaced `rejected`, so a burst of 401s renews once. Returns
   * `rejected` itself when a 401 already made this process (or fleet) ask for a new token less than
   * `token.minRenewalIntervalMs` ago: a token refused that fresh is a configuration problem, which
   * more tokens would not solve; the caller reports it.
   */
  renewAfterRejection(rejected: string): Promise<string>;
}

/** A token as the identity provider issued it. */
export interface IssuedToken {
  readonly accessToken: string;
  /** `expires_in` as the server gave it; never assumed. */
  readonly expiresInSeconds: number;
}
