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

/**
 * Redis's clock decides for everyone, and the window is a little longer than configured, so the
 * few milliseconds between admission and arrival never let the service see more than `max` in
 * any window of its own.
 */
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

/** Moves an admitted request's stamp to now (Redis's clock), keeping it only if it is still in the log. */
const RESTAMP = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
if redis.call('ZADD', KEYS[1], 'XX', 'CH', nowMs, ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return 0`;

const ARRIVAL_SLACK_MS = 30;

/**
 * The fleet-wide export rate limit: a sliding-window log in Redis, so no `windowMs` window holds
 * more than `max` requests from all workers. BullMQ's fixed-window limiter lets up to twice the
 * limit through across a boundary; this gate keeps the promise to the service.
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
    this.#windowMs = options.windowMs + ARRIVAL_SLACK_MS;
  }

  async acquire(): Promise<RequestPermit> {
    const member = randomBytes(8).toString('hex');
    for (;;) {
      const waitMs = Number(await this.#redis.eval(ADMIT, 1, this.#key, this.#windowMs, this.#max, member));
      if (waitMs <= 0) break;
      await sleep(waitMs + Math.random() * 10);
    }
    return {
      // With busy workers the delay between admission and arrival let extra requests into one window
      // at the service. Counting the window from the answer closes that gap; the cost is that the
      // window also holds the service's time to answer, so the fleet runs a little under the limit.
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
