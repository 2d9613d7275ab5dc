import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AuthError } from '../errors.js';
import type { IdentityProviderWaitOptions } from './identity-provider-wait-options.js';
import type { IdentityProviderOutage, OutageStore } from './identity-provider-outage.js';
import { interruptibleSleep, issueThroughOutage } from './issue-through-outage.js';
import type { IssuedToken, TokenSource } from './token-source.js';

export interface RedisTokenSourceOptions extends IdentityProviderWaitOptions {
  readonly redis: Redis;
  /** Key prefix shared by the fleet (the queue's prefix). */
  readonly prefix: string;
  readonly issue: () => Promise<IssuedToken>;
  /** @defaultValue 30 */
  readonly refreshMarginSeconds?: number;
  /** How long a process waits for another one's renewal before trying itself. @defaultValue 15000 */
  readonly lockTimeoutMs?: number;
  /**
   * After the identity provider refuses the credentials, nobody in the fleet asks again with them
   * for this long: every caller fails at once with the refusal instead. @defaultValue 600000
   */
  readonly rejectedRetryMs?: number;
  /**
   * `token.minRenewalIntervalMs`: at most one new token per this interval is asked for because of a
   * 401, for the whole fleet (remembered under the prefix); within it, a 401 to the current token
   * returns that token itself (the export client then reports `EXPORT_UNAUTHORIZED`). @defaultValue 60000
   */
  readonly minRenewalIntervalMs?: number;
}

/** Longest TTL ever given to the token key: a day is the longest lifetime believed, this is ample. */
const MAX_TOKEN_TTL_MS = 7 * 86_400_000;

// Deletes the key only if it still holds the given value: a lock or a token is only ever removed
// by the one who means that exact value, never a newer one written meanwhile.
const DELETE_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
// Extends the renewal lock only while we still hold it.
const EXTEND_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
// Claims the fleet's one renewal after a 401 for this interval: 1 claimed, 2 already claimed for
// this same token (its renewal is under way or done), 0 claimed for an earlier token.
const CLAIM_RENEWAL_AFTER_REJECTION = `if redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
if redis.call('get', KEYS[1]) == ARGV[1] then return 2 end
return 0`;

/**
 * The fleet's token source: the token lives in Redis with a TTL of its lifetime less the margin,
 * and renewal is guarded by a Redis lock, so N processes × M jobs make one token request per
 * lifetime. Within a process, concurrent callers also share one renewal (single flight). While the
 * identity provider is unavailable, the lock's holder waits for it (see {@link issueThroughOutage}),
 * keeping the lock alive, and shares what it learns about the outage through Redis, so the fleet asks
 * once per backoff step and gives up together once `unavailableWaitMs` has passed.
 */
export class RedisTokenSource implements TokenSource {
  readonly #redis: Redis;
  readonly #tokenKey: string;
  readonly #lockKey: string;
  readonly #issue: () => Promise<IssuedToken>;
  readonly #marginSeconds: number;
  readonly #lockTimeoutMs: number;
  readonly #outageKey: string;
  readonly #refusedKey: string;
  readonly #renewedAfterRejectionKey: string;
  readonly #options: RedisTokenSourceOptions;
  #pending: Promise<string> | undefined;

  constructor(options: RedisTokenSourceOptions) {
    this.#redis = options.redis;
    this.#tokenKey = `${options.prefix}:token:access`;
    this.#lockKey = `${options.prefix}:token:renewal-lock`;
    this.#issue = options.issue;
    this.#marginSeconds = options.refreshMarginSeconds ?? 30;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 15_000;
    this.#outageKey = `${options.prefix}:token:provider-outage`;
    this.#refusedKey = `${options.prefix}:token:credentials-refused`;
    this.#renewedAfterRejectionKey = `${options.prefix}:token:renewed-after-rejection`;
    this.#options = options;
  }

  async getToken(): Promise<string> {
    const cached = await this.#redis.get(this.#tokenKey);
    if (cached) return cached;
    return this.#renew(undefined);
  }

  async renewAfterRejection(rejected: string): Promise<string> {
    const cached = await this.#redis.get(this.#tokenKey);
    if (cached && cached !== rejected) return cached;
    if (cached === rejected) {
      // The token is not due (its key would have expired): a 401 renews it at most once per interval
      // for the fleet. A gateway refusing every token (wrong tenant, client or permissions) is
      // answered with the refused token itself, and the slice fails, not with a token per burst.
      const claim = await this.#redis.eval(CLAIM_RENEWAL_AFTER_REJECTION, 1, this.#renewedAfterRejectionKey, fingerprint(rejected), this.#options.minRenewalIntervalMs ?? 60_000);
      if (claim === 0) return rejected;
      // Only the holder of the failed token may drop it; if it was already replaced, use the new one.
      if (claim === 1) await this.#redis.eval(DELETE_IF_EQUAL, 1, this.#tokenKey, rejected);
    }
    return this.#renew(rejected);
  }

  #renew(rejected: string | undefined): Promise<string> {
    this.#pending ??= this.#renewAcrossFleet(rejected).finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #renewAcrossFleet(rejected: string | undefined): Promise<string> {
    const startedAt = Date.now();
    // The holder keeps the lock alive while it waits for an unavailable provider: wait as long as it may.
    const deadline = startedAt + this.#lockTimeoutMs + this.#waitMs + this.#maxDelayMs;
    for (;;) {
      const cached = await this.#redis.get(this.#tokenKey);
      if (cached && cached !== rejected) return cached;
      await this.#throwIfRefused();
      const lockValue = randomBytes(12).toString('hex');
      const locked = await this.#redis.set(this.#lockKey, lockValue, 'PX', this.#lockTimeoutMs, 'NX');
      if (locked === 'OK') {
        try {
          // Another process may have renewed between our read and our lock.
          const again = await this.#redis.get(this.#tokenKey);
          if (again && again !== rejected) return again;
          await this.#throwIfRefused();
          let askedAt = Date.now();
          const issued = await this.#rememberRefusal(() =>
            issueThroughOutage({
              issue: () => {
                askedAt = Date.now();
                return this.#issue();
              },
              waitMs: this.#waitMs,
              baseDelayMs: this.#options.unavailableBaseDelayMs,
              maxDelayMs: this.#maxDelayMs,
              store: this.#outageStore(),
              onWait: async (wait) => {
                await this.#redis.eval(EXTEND_IF_EQUAL, 1, this.#lockKey, lockValue, wait.delayMs + this.#lockTimeoutMs);
                this.#options.onUnavailable?.(wait);
              },
              onRecovered: this.#options.onRecovered,
              signal: this.#options.signal,
            }),
          );
          const lifetimeMs = issued.expiresInSeconds * 1000;
          // The lifetime started when we asked; the answer's travel time is already spent.
          const spentMs = Date.now() - askedAt;
          const ttlMs = Math.max(1, Math.floor(lifetimeMs - Math.min(this.#marginSeconds * 1000, lifetimeMs / 10) - spentMs));
          // Redis refuses a PX that is not an integer in range ("ERR value is not an integer or out of range").
          const safeTtlMs = Number.isFinite(ttlMs) ? Math.min(ttlMs, MAX_TOKEN_TTL_MS) : 1;
          await this.#redis.set(this.#tokenKey, issued.accessToken, 'PX', safeTtlMs);
          return issued.accessToken;
        } finally {
          await this.#redis.eval(DELETE_IF_EQUAL, 1, this.#lockKey, lockValue);
        }
      }
      if (Date.now() > deadline) {
        throw new AuthError('AUTH_UNAVAILABLE', `timed out waiting for another worker to renew the shared token (lock ${this.#lockKey}); the slice is retried`);
      }
      // Poll briskly for a normal renewal; gently once it is clearly a wait for the provider.
      const pauseMs = Date.now() - startedAt > 1_000 ? 250 : 25;
      await interruptibleSleep(pauseMs + Math.random() * pauseMs, this.#options.signal);
    }
  }

  /**
   * Fails at once while the fleet holds a recent refusal of the credentials: asking again with the
   * same credentials is what locks the account. The key expires after `rejectedRetryMs`, and the
   * next renewal (one for the fleet, under the lock) asks again.
   */
  async #throwIfRefused(): Promise<void> {
    const refused = await this.#redis.get(this.#refusedKey);
    if (!refused) return;
    const { message, nextAskAt } = JSON.parse(refused) as { message: string; nextAskAt: number };
    throw new AuthError('AUTH_REJECTED', `${message} (not asked again with the same credentials before ${new Date(nextAskAt).toISOString()}: token.rejectedRetryMs)`);
  }

  async #rememberRefusal(issue: () => Promise<IssuedToken>): Promise<IssuedToken> {
    try {
      const issued = await issue();
      await this.#redis.del(this.#refusedKey);
      return issued;
    } catch (error) {
      if (error instanceof AuthError && error.code === 'AUTH_REJECTED') {
        const retryMs = this.#options.rejectedRetryMs ?? 600_000;
        await this.#redis.set(this.#refusedKey, JSON.stringify({ message: error.message, nextAskAt: Date.now() + retryMs }), 'PX', retryMs);
      }
      throw error;
    }
  }

  get #waitMs(): number {
    return this.#options.unavailableWaitMs ?? 300_000;
  }

  get #maxDelayMs(): number {
    return this.#options.unavailableMaxDelayMs ?? 30_000;
  }

  /** The outage as the whole fleet knows it; it expires by itself long after the last failure. */
  #outageStore(): OutageStore {
    const redis = this.#redis;
    const key = this.#outageKey;
    const keepMs = 2 * Math.max(this.#waitMs, this.#maxDelayMs) + 60_000;
    return {
      read: async () => {
        const text = await redis.get(key);
        return text ? (JSON.parse(text) as IdentityProviderOutage) : undefined;
      },
      write: async (outage) => {
        await redis.set(key, JSON.stringify(outage), 'PX', keepMs);
      },
      clear: async () => {
        await redis.del(key);
      },
    };
  }
}

/** Names a token in Redis without storing it a second time. */
function fingerprint(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 32);
}
