import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { AuthError } from '../errors.js';
import type { IssuedToken, TokenSource } from './token-source.js';

export interface RedisTokenSourceOptions {
  readonly redis: Redis;
  /** Key prefix shared by the fleet (the queue's prefix). */
  readonly prefix: string;
  readonly issue: () => Promise<IssuedToken>;
  /** @defaultValue 30 */
  readonly refreshMarginSeconds?: number;
  /** How long a process waits for another one's renewal before trying itself. @defaultValue 15000 */
  readonly lockTimeoutMs?: number;
}

// Deletes the key only if it still holds the given value: a lock or a token is only ever removed
// by the one who means that exact value, never a newer one written meanwhile.
const DELETE_IF_EQUAL = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * The fleet's token source: the token lives in Redis with a TTL of its lifetime less the margin,
 * and renewal is guarded by a Redis lock, so N processes × M jobs make one token request per
 * lifetime. Within a process, concurrent callers also share one renewal (single flight).
 */
export class RedisTokenSource implements TokenSource {
  readonly #redis: Redis;
  readonly #tokenKey: string;
  readonly #lockKey: string;
  readonly #issue: () => Promise<IssuedToken>;
  readonly #marginSeconds: number;
  readonly #lockTimeoutMs: number;
  #pending: Promise<string> | undefined;

  constructor(options: RedisTokenSourceOptions) {
    this.#redis = options.redis;
    this.#tokenKey = `${options.prefix}:token:access`;
    this.#lockKey = `${options.prefix}:token:renewal-lock`;
    this.#issue = options.issue;
    this.#marginSeconds = options.refreshMarginSeconds ?? 30;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 15_000;
  }

  async getToken(): Promise<string> {
    const cached = await this.#redis.get(this.#tokenKey);
    if (cached) return cached;
    return this.#renew(undefined);
  }

  async renewAfterRejection(rejected: string): Promise<string> {
    // Only the holder of the failed token may drop it; if it was already replaced, use the new one.
    await this.#redis.eval(DELETE_IF_EQUAL, 1, this.#tokenKey, rejected);
    return this.#renew(rejected);
  }

  #renew(rejected: string | undefined): Promise<string> {
    this.#pending ??= this.#renewAcrossFleet(rejected).finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #renewAcrossFleet(rejected: string | undefined): Promise<string> {
    const deadline = Date.now() + this.#lockTimeoutMs;
    for (;;) {
      const cached = await this.#redis.get(this.#tokenKey);
      if (cached && cached !== rejected) return cached;
      const lockValue = randomBytes(12).toString('hex');
      const locked = await this.#redis.set(this.#lockKey, lockValue, 'PX', this.#lockTimeoutMs, 'NX');
      if (locked === 'OK') {
        try {
          // Another process may have renewed between our read and our lock.
          const again = await this.#redis.get(this.#tokenKey);
          if (again && again !== rejected) return again;
          const askedAt = Date.now();
          const issued = await this.#issue();
          const lifetimeMs = issued.expiresInSeconds * 1000;
          // The lifetime started when we asked; the answer's travel time is already spent.
          const spentMs = Date.now() - askedAt;
          const ttlMs = Math.max(1, Math.floor(lifetimeMs - Math.min(this.#marginSeconds * 1000, lifetimeMs / 10) - spentMs));
          await this.#redis.set(this.#tokenKey, issued.accessToken, 'PX', ttlMs);
          return issued.accessToken;
        } finally {
          await this.#redis.eval(DELETE_IF_EQUAL, 1, this.#lockKey, lockValue);
        }
      }
      if (Date.now() > deadline) {
        throw new AuthError('AUTH_UNAVAILABLE', 'timed out waiting for another worker to renew the shared token; it is retried');
      }
      await sleep(25 + Math.random() * 25);
    }
  }
}
