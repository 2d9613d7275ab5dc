/**
 * The shortest lifetime a token is planned with: an `expires_in` under it (0, 0.001, negative) is
 * used as this, so a broken answer cannot make every job ask for a token of its own.
 */
export const SHORTEST_TOKEN_LIFETIME_SECONDS = 1;

/** The longest lifetime planned with: `token.maxLifetimeSeconds` at its highest (a year). */
const LONGEST_TOKEN_LIFETIME_SECONDS = 31_536_000;

/** A lifetime from this one up is renewed a tenth of it early; a shorter one less, in proportion. */
const FULL_MARGIN_LIFETIME_MS = 10_000;

/** The longest a token counts as fresh after it was asked for (see {@link TokenSchedule.freshUntil}). */
const LONGEST_FRESH_MS = 30_000;

export interface TokenScheduleOptions {
  /** When the token was asked for (ms since the epoch): its lifetime is counted from here. */
  readonly askedAt: number;
  /** `expires_in` as read from the answer. */
  readonly expiresInSeconds: number;
  /** `token.refreshMarginSeconds`: renew this long before expiry, at most a tenth of the lifetime (less under 10 s). */
  readonly refreshMarginSeconds: number;
}

/** When a token is to be renewed, and how long its provider vouches for it. */
export interface TokenSchedule {
  /** The lifetime planned with, in ms: the stated one, at least 1 s. */
  readonly lifetimeMs: number;
  /** When the stated lifetime runs out, counted from the ask. */
  readonly expiresAt: number;
  /** When it stops being handed out: expiry less the margin. */
  readonly renewAt: number;
  /**
   * Until when a 401 to it says more than "expired": a token asked for because the one before it was
   * refused, and refused itself before this, is a configuration problem (tenant, client, permissions),
   * which more tokens would not solve. The first half of its lifetime, at most 30 s.
   */
  readonly freshUntil: number;
}

/**
 * Plans a token's use from its stated lifetime, counted from the ask (the provider's clock started
 * first). The margin covers a request's way to the gateway: at most a tenth of the lifetime,
 * shrinking in proportion for short tokens, so the provider is asked about once per lifetime.
 */
export function scheduleToken(options: TokenScheduleOptions): TokenSchedule {
  const seconds = options.expiresInSeconds;
  const plannedSeconds = Number.isNaN(seconds) ? SHORTEST_TOKEN_LIFETIME_SECONDS : Math.min(LONGEST_TOKEN_LIFETIME_SECONDS, Math.max(SHORTEST_TOKEN_LIFETIME_SECONDS, seconds));
  const lifetimeMs = plannedSeconds * 1000;
  const marginMs = Math.min(Math.max(0, options.refreshMarginSeconds) * 1000, (lifetimeMs / 10) * Math.min(1, lifetimeMs / FULL_MARGIN_LIFETIME_MS));
  return {
    lifetimeMs,
    expiresAt: options.askedAt + lifetimeMs,
    renewAt: options.askedAt + lifetimeMs - marginMs,
    freshUntil: options.askedAt + Math.min(lifetimeMs / 2, LONGEST_FRESH_MS),
  };
}
