import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from './redis-connection.js';
import type { RequestGate, RequestPermit } from '../gateway/request-gate.js';

export interface RedisRateGateOptions {
  readonly redis: RedisClient;
  /** Key prefix shared by the fleet (the queue's prefix). */
  readonly prefix: string;
  /** Requests admitted per window. */
  readonly max: number;
  readonly windowMs: number;
}

/** Redis's clock decides for everyone. */
const ADMIT = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], nowMs, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return tonumber(oldest[2]) + window - nowMs + 1`;

/**
 * Stamps an answered request at now (Redis's clock), back in the log if a long wait for its answer
 * had aged its admission out.
 */
const RESTAMP = `
local now = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 0`;

/**
 * The fleet-wide export rate limit: a sliding-window log in Redis, so no `windowMs` window holds
 * more than `max` requests from all workers. BullMQ's fixed-window limiter lets up to twice the
 * limit through across a boundary; this gate keeps the promise to the service.
 *
 * A request counts from its admission until it is answered, then from its answer. The service
 * counted it somewhere between the two, and when is not known (a busy sender, a service's own
 * queue), so only counting a window from the answer keeps any window at the service within `max`,
 * whatever the service does. The price is the service's time to answer on top of every window:
 * the fleet reaches `max × windowMs / (windowMs + time to answer)`, not `max`.
 */
export class RedisRateGate implements RequestGate {
  readonly #redis: RedisClient;
  readonly #key: string;
  readonly #max: number;
  readonly #windowMs: number;

  constructor(options: RedisRateGateOptions) {
    this.#redis = options.redis;
    this.#key = `${options.prefix}:rate-limit:export-requests`;
    this.#max = options.max;
    this.#windowMs = options.windowMs;
  }

  async acquire(): Promise<RequestPermit> {
    const member = randomBytes(8).toString('hex');
    for (;;) {
      const waitMs = Number(await this.#redis.eval(ADMIT, 1, this.#key, this.#windowMs, this.#max, member));
      if (waitMs <= 0) break;
      await sleep(waitMs + Math.random() * 10);
    }
    return {
      answered: async () => {
        try {
          await this.#redis.eval(RESTAMP, 1, this.#key, this.#windowMs, member);
        } catch {
          // The request is done either way; a Redis hiccup here only leaves the admission stamp.
        }
      },
    };
  }
}
