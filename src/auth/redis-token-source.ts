import { createHash, randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { AuthError } from '../errors/sync-error.js';
import type { IdentityProviderWaitOptions } from './identity-provider-wait-options.js';
import type { IdentityProviderOutage, OutageStore } from './identity-provider-outage.js';
import { interruptibleSleep, issueThroughOutage } from './issue-through-outage.js';
import { scheduleToken, type TokenSchedule } from './token-schedule.js';
import type { IssuedToken, TokenSource } from './token-source.js';

export interface RedisTokenSourceOptions extends IdentityProviderWaitOptions {
  readonly redis: Redis | Cluster;
  /** Key prefix shared by the fleet (the queue's prefix). */
  readonly prefix: string;
  readonly issue: () => Promise<IssuedToken>;
  /** Renew this long before expiry, capped at a tenth of the token's lifetime (see {@link scheduleToken}). @defaultValue 30 */
  readonly refreshMarginSeconds?: number;
  /** How long a process waits for another one's renewal before trying itself. @defaultValue 15000 */
  readonly lockTimeoutMs?: number;
  /**
   * After the identity provider refuses the credentials, nobody in the fleet asks again with them
   * for this long: every caller fails at once with the refusal instead. @defaultValue 600000
   */
  readonly rejectedRetryMs?: number;
  /**
   * How long this process hands out the fleet's token it last read or stored without reading Redis
   * again; never past the key's own expiry. @defaultValue 1000
   */
  readonly holdMs?: number;
}

/** The fleet's token as this process last saw it, and until when it may hand it out unread. */
interface HeldToken {
  readonly token: string;
  readonly until: number;
}

/** Longest TTL ever given to the token key: a day is the longest lifetime believed, this is ample. */
const MAX_TOKEN_TTL_MS = 7 * 86_400_000;

// Deletes the key only if it still holds the given value: a lock or a token is only ever removed
// by the one who means that exact value, never a newer one written meanwhile.
const DELETE_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
// Extends the renewal lock only while we still hold it.
const EXTEND_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
// Drops a token refused before it was due, if it is still the fleet's, and leaves a note saying so
// for as long as it would have lived: the token asked for next is then one a 401 asked for.
const DROP_REFUSED = `if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local ttl = redis.call('pttl', KEYS[1])
redis.call('del', KEYS[1])
if ttl > 0 then redis.call('set', KEYS[2], '1', 'PX', ttl) end
return 1`;
// The token and how long its key has left, read together so the time belongs to that token.
const READ_WITH_TTL = `return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}`;

/**
 * The fleet's token source: one token in Redis, renewed under a Redis lock, so the fleet asks once
 * per lifetime. A 401 renews it unless it is fresh ({@link TokenSchedule.freshUntil}, kept in Redis
 * so all judge alike). Through an outage the lock's holder waits and shares the backoff via Redis.
 */
export class RedisTokenSource implements TokenSource {
  readonly #redis: Redis | Cluster;
  readonly #tokenKey: string;
  readonly #lockKey: string;
  readonly #issue: () => Promise<IssuedToken>;
  readonly #marginSeconds: number;
  readonly #lockTimeoutMs: number;
  readonly #outageKey: string;
  readonly #refusedKey: string;
  readonly #freshKey: string;
  readonly #refusedInLifetimeKey: string;
  readonly #options: RedisTokenSourceOptions;
  readonly #holdMs: number;
  #pending: Promise<string> | undefined;
  #held: HeldToken | undefined;
  #reading: Promise<string | undefined> | undefined;

  constructor(options: RedisTokenSourceOptions) {
    this.#redis = options.redis;
    this.#tokenKey = `${options.prefix}:token:access`;
    this.#lockKey = `${options.prefix}:token:renewal-lock`;
    this.#issue = options.issue;
    this.#marginSeconds = options.refreshMarginSeconds ?? 30;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 15_000;
    this.#outageKey = `${options.prefix}:token:provider-outage`;
    this.#refusedKey = `${options.prefix}:token:credentials-refused`;
    this.#freshKey = `${options.prefix}:token:fresh`;
    this.#refusedInLifetimeKey = `${options.prefix}:token:refused-in-lifetime`;
    this.#options = options;
    this.#holdMs = options.holdMs ?? 1_000;
  }

  /**
   * The fleet's token. Read from Redis at most once per `holdMs` by this process: a read before
   * every download was a round trip per slice. A token replaced meanwhile by another process is
   * met as a 401, which {@link renewAfterRejection} answers with the fleet's new one.
   */
  async getToken(): Promise<string> {
    const held = this.#held;
    if (held !== undefined && Date.now() < held.until) return held.token;
    // Jobs asking at once share one read.
    this.#reading ??= this.#readShared().finally(() => {
      this.#reading = undefined;
    });
    return (await this.#reading) ?? this.#renew(undefined);
  }

  /** The fleet's token from Redis, held for `holdMs`; undefined when there is none. */
  async #readShared(): Promise<string | undefined> {
    // Taken before the read, so the hold ends no later than the key does.
    const readAt = Date.now();
    const [cached, ttlMs] = (await this.#redis.eval(READ_WITH_TTL, 1, this.#tokenKey)) as [string | null, number];
    if (!cached) return undefined;
    this.#hold(cached, readAt + ttlMs);
    return cached;
  }

  async renewAfterRejection(rejected: string): Promise<string> {
    if (this.#held?.token === rejected) this.#held = undefined;
    const [cached, fresh] = await this.#redis.mget(this.#tokenKey, this.#freshKey);
    // Already replaced: a burst of 401s renews once for the fleet.
    if (cached && cached !== rejected) return cached;
    if (cached === rejected) {
      // Refused within its lifetime right after a 401 asked for it: no new token would fare better.
      if (fresh === fingerprint(rejected)) return rejected;
      // Refused within its lifetime (revoked, or the gateway forgot it): dropped, if still the fleet's.
      await this.#redis.eval(DROP_REFUSED, 2, this.#tokenKey, this.#refusedInLifetimeKey, rejected);
    }
    // Gone from Redis: its lifetime (less the margin) is over, so the 401 is its expiry.
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
          const schedule = scheduleToken({ askedAt, expiresInSeconds: issued.expiresInSeconds, refreshMarginSeconds: this.#marginSeconds });
          await this.#store(issued.accessToken, schedule);
          this.#hold(issued.accessToken, schedule.renewAt);
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

  /** Hands `token` out without reading Redis until `holdMs` from now, or `expiresAt` if sooner. */
  #hold(token: string, expiresAt: number): void {
    this.#held = { token, until: Math.min(Date.now() + this.#holdMs, expiresAt) };
  }

  /** Shares a new token with the fleet until it is due, and whether it is fresh after a 401. */
  async #store(token: string, schedule: TokenSchedule): Promise<void> {
    const afterRejection = (await this.#redis.del(this.#refusedInLifetimeKey)) > 0;
    // The lifetime started when we asked; the answer's travel time is already spent.
    const now = Date.now();
    const transaction = this.#redis.multi().set(this.#tokenKey, token, 'PX', ttlOf(schedule.renewAt - now));
    if (afterRejection && schedule.freshUntil > now) transaction.set(this.#freshKey, fingerprint(token), 'PX', ttlOf(schedule.freshUntil - now));
    else transaction.del(this.#freshKey);
    await transaction.exec();
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

/** A TTL Redis takes: a PX that is not a positive integer in range is refused ("ERR value is not an integer or out of range"). */
function ttlOf(ms: number): number {
  return Math.min(MAX_TOKEN_TTL_MS, Math.max(1, Math.floor(ms)));
}

/** Names a token in Redis without storing it a second time. */
function fingerprint(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 32);
}
