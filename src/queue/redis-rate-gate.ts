import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from './redis-connection.js';
import type { RequestAnswer, RequestGate, RequestPermit } from '../gateway/request-gate.js';

export interface RedisRateGateOptions {
  readonly redis: RedisClient;
  /** Key prefix shared by the fleet (the queue's prefix). */
  readonly prefix: string;
  /** Requests admitted per window. */
  readonly max: number;
  readonly windowMs: number;
  /**
   * Answers this process must have had before a window counts from earlier than the answer (see
   * `#spentAnswering`). Only for a service known to count a request as soon as it receives it: one
   * that counts it after a steady queue of its own (a proxy, a load balancer) longer than the
   * window's slack would see more than `max` in a window. @defaultValue never: every window
   * counts from the answer
   */
  readonly answersBeforeBackdating?: number;
}

/**
 * Redis's clock decides for everyone, and the window is a little longer than configured (see
 * {@link WAY_THERE_SLACK_MS}).
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

/**
 * Moves an admitted request's stamp to now (Redis's clock) less ARGV[3] ms, keeping it only if it
 * is still in the log and never moving it back.
 */
const RESTAMP = `
local now = redis.call('TIME')
local stampMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(ARGV[3])
local admittedMs = redis.call('ZSCORE', KEYS[1], ARGV[2])
if admittedMs and stampMs > tonumber(admittedMs) then
  redis.call('ZADD', KEYS[1], stampMs, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return 0`;

/**
 * A request's window counts from a moment worked out from its answer (see `#spentAnswering`),
 * which can be early by the request's way to the service; the window is this much longer to cover it.
 */
const WAY_THERE_SLACK_MS = 30;

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
  readonly #answersBeforeBackdating: number;
  #answers = 0;
  #fastestRoundTripMs = Number.POSITIVE_INFINITY;

  constructor(options: RedisRateGateOptions) {
    this.#redis = options.redis;
    this.#key = `${options.prefix}:rate-limit:export-requests`;
    this.#max = options.max;
    this.#windowMs = options.windowMs + WAY_THERE_SLACK_MS;
    this.#answersBeforeBackdating = options.answersBeforeBackdating ?? Number.POSITIVE_INFINITY;
  }

  async acquire(): Promise<RequestPermit> {
    const member = randomBytes(8).toString('hex');
    for (;;) {
      const waitMs = Number(await this.#redis.eval(ADMIT, 1, this.#key, this.#windowMs, this.#max, member));
      if (waitMs <= 0) break;
      await sleep(waitMs + Math.random() * 10);
    }
    return {
      answered: async (answer = {}) => {
        const spentMs = this.#spentAnswering(answer);
        try {
          await this.#redis.eval(RESTAMP, 1, this.#key, this.#windowMs, member, spentMs);
        } catch {
          // The request is done either way; a Redis hiccup here only leaves the admission stamp.
        }
      },
    };
  }

  /**
   * How long before its answer the service had seen a request: the fastest round trip this process
   * has had from it, this one included. Counting a window from the admission let extra requests
   * into one window at the service whenever a busy sender or a busy service stamped the arrival
   * late; counting from the answer closes that gap but holds the window for the service's whole
   * time to answer too, which kept the fleet well under its limit. No answer comes sooner after
   * its arrival than the fastest round trip less the way there, so the window counts from that,
   * and the slack covers the way there. The first answers of a process come late (connections
   * opened, code still cold, a service just woken) and would make the fastest round trip too long,
   * so until enough have come every window counts from the answer itself. Off unless asked for:
   * a service that counts after a steady queue makes every way there longer than the slack.
   */
  #spentAnswering(answer: RequestAnswer): number {
    if (answer.roundTripMs === undefined) return 0;
    this.#answers += 1;
    this.#fastestRoundTripMs = Math.min(this.#fastestRoundTripMs, answer.roundTripMs);
    return this.#answers < this.#answersBeforeBackdating ? 0 : Math.floor(this.#fastestRoundTripMs);
  }
}
