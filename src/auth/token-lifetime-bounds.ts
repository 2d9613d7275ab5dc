import { printableText } from '../text/printable-text.js';
import { SHORTEST_TOKEN_LIFETIME_SECONDS } from './token-schedule.js';

/** The access-token lifetime the spec gives; assumed when `expires_in` is missing or not a number. */
const SPEC_LIFETIME_SECONDS = 300;

/** A plain decimal number, as a provider that sends `expires_in` as a string ("300") writes it. */
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

/** An `expires_in` that was not used as given, as reported before it is replaced (a warning in the log). */
export interface TokenLifetimeAdjustment {
  /** `expires_in` as the identity provider wrote it (JSON), escaped and shortened. */
  readonly given: string;
  /** The lifetime used instead. */
  readonly usedSeconds: number;
  /** What was wrong and what was done, for the log line. */
  readonly message: string;
}

export interface TokenLifetimeBoundsOptions {
  /** `token.maxLifetimeSeconds`. @defaultValue 86400 */
  readonly maxSeconds?: number;
  /**
   * Told when an `expires_in` is not used as given; once per distinct value, so a provider that
   * always answers the same odd value makes one log line, not one per token.
   */
  readonly onAdjusted?: (adjustment: TokenLifetimeAdjustment) => void;
}

/**
 * Reads `expires_in` into a lifetime; a stated one is believed however short. Only nonsense is
 * bounded: under 1 s becomes 1 s (else every job asks for its own token), over
 * `token.maxLifetimeSeconds` is cut (Redis refuses huge TTLs), missing means the spec's lifetime.
 */
export class TokenLifetimeBounds {
  readonly #maxSeconds: number;
  readonly #onAdjusted: ((adjustment: TokenLifetimeAdjustment) => void) | undefined;
  #lastReported: string | undefined;

  constructor(options: TokenLifetimeBoundsOptions = {}) {
    this.#maxSeconds = options.maxSeconds ?? 86_400;
    this.#onAdjusted = options.onAdjusted;
  }

  /** The lifetime to plan with, in seconds, for `expires_in` as the token answer held it (any JSON value). */
  lifetimeOf(expiresIn: unknown): number {
    const given = expiresIn === undefined ? 'missing' : printableText(JSON.stringify(expiresIn) ?? String(expiresIn), 40);
    const seconds = readSeconds(expiresIn);
    if (seconds === undefined) {
      const used = this.#clamp(SPEC_LIFETIME_SECONDS);
      this.#report(given, used, `the token answer's expires_in (${given}) is not a number of seconds: assumed ${used} s (the spec's lifetime, at most token.maxLifetimeSeconds)`);
      return used;
    }
    if (seconds < SHORTEST_TOKEN_LIFETIME_SECONDS) {
      this.#report(
        given,
        SHORTEST_TOKEN_LIFETIME_SECONDS,
        `the token answer's expires_in (${given}) is under ${SHORTEST_TOKEN_LIFETIME_SECONDS} s: the token is used as lasting ${SHORTEST_TOKEN_LIFETIME_SECONDS} s`,
      );
      return SHORTEST_TOKEN_LIFETIME_SECONDS;
    }
    if (seconds > this.#maxSeconds) {
      this.#report(
        given,
        this.#maxSeconds,
        `the token answer's expires_in (${given}) is over token.maxLifetimeSeconds: the token is renewed after ${this.#maxSeconds} s at the latest`,
      );
      return this.#maxSeconds;
    }
    return seconds;
  }

  #clamp(seconds: number): number {
    return Math.min(this.#maxSeconds, Math.max(SHORTEST_TOKEN_LIFETIME_SECONDS, seconds));
  }

  #report(given: string, usedSeconds: number, message: string): void {
    if (given === this.#lastReported) return;
    this.#lastReported = given;
    this.#onAdjusted?.({ given, usedSeconds, message });
  }
}

/** The number `expires_in` holds; undefined when it holds none (missing, null, "abc", an object). */
function readSeconds(expiresIn: unknown): number | undefined {
  // JSON cannot hold Infinity, but 1e400 parses to it: that is a (far too) large number, not none.
  if (typeof expiresIn === 'number') return Number.isNaN(expiresIn) ? undefined : expiresIn;
  if (typeof expiresIn === 'string' && DECIMAL.test(expiresIn.trim())) return Number(expiresIn.trim());
  return undefined;
}
