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
  /**
   * Longest a request can take from its send to its answer (the HTTP client's connect and headers
   * timeouts). An admitted request holds its place that long at most without an answer, so the
   * requests of a worker that died free their places.
   */
  readonly requestTimeoutMs: number;
  /** A request sent later than this after its admission (a long wait for a token) is admitted again first. */
  readonly sendWithinMs?: number;
}

const DEFAULT_SEND_WITHIN_MS = 5_000;

/**
 * Redis's clock decides for everyone. A request in flight is scored at the end of its lease, an
 * answered one at its answer; either counts until its score is a window old. The member is taken
 * out first, so a permit admitted again does not count twice.
 */
const ADMIT = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], nowMs + tonumber(ARGV[4]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]) + window)
  return 0
end
local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
return math.min(oldest, nowMs) + window - nowMs + 1`;

/** Scores an answered request at now (Redis's clock), back in the log if its lease had run out. */
const ANSWERED = `
local now = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 0`;

/**
 * The fleet-wide export rate limit: a sliding-window log in Redis, so no `windowMs` window holds
 * more than `max` requests from all workers. BullMQ's fixed-window limiter lets up to twice the
 * limit through across a boundary; this gate keeps the promise to the service.
 *
 * A request counts from its admission until it is answered, however long that takes (up to its
 * lease), then for a window from its answer. The service counted it somewhere between its send
 * and its answer, and when is not known (a busy sender, a service's own queue), so only this keeps
 * any window at the service within `max`, whatever the service does. The price is the service's
 * time to answer on top of every window: the fleet reaches
 * `max × windowMs / (windowMs + time to answer)`, not `max`.
 */
export class RedisRateGate implements RequestGate {
  readonly #redis: RedisClient;
  readonly #key: string;
  readonly #max: number;
  readonly #windowMs: number;
  readonly #sendWithinMs: number;
  /** How long past its admission an unanswered request holds its place: until its send, then through its request. */
  readonly #leaseMs: number;
  /** This process's requests waiting for a place, in line behind {@link #line}. */
  #waiting = 0;
  /** Settles when the last request in this process's line has its place (or gave up). */
  #line: Promise<void> = Promise.resolve();

  constructor(options: RedisRateGateOptions) {
    this.#redis = options.redis;
    this.#key = `${options.prefix}:rate-limit:export-requests`;
    this.#max = options.max;
    this.#windowMs = options.windowMs;
    this.#sendWithinMs = options.sendWithinMs ?? DEFAULT_SEND_WITHIN_MS;
    this.#leaseMs = this.#sendWithinMs + options.requestTimeoutMs;
  }

  async acquire(): Promise<RequestPermit> {
    const member = randomBytes(8).toString('hex');
    let admittedAt = await this.#admit(member);
    return {
      sending: async () => {
        if (performance.now() - admittedAt <= this.#sendWithinMs) return false;
        admittedAt = await this.#admit(member);
        return true;
      },
      answered: async () => {
        try {
          await this.#redis.eval(ANSWERED, 1, this.#key, this.#leaseMs + this.#windowMs, member);
        } catch {
          // The request is done either way; a Redis hiccup here leaves it held until its lease runs out.
        }
      },
    };
  }

  /**
   * Waits for room in the window and takes it for `member`; returns when, on this process's clock.
   * While there is room, every request asks Redis at once. Once there is none, this process's
   * requests wait in line and only the first asks Redis, so a freed place wakes one waiter, not all
   * of them each to be told to wait again.
   */
  async #admit(member: string): Promise<number> {
    let waitMs = this.#waiting === 0 ? await this.#tryAdmit(member) : undefined;
    if (waitMs !== undefined && waitMs <= 0) return performance.now();
    // Behind others, the wait Redis gave is stale by the time this one's turn comes: it asks again then.
    if (this.#waiting > 0) waitMs = undefined;
    this.#waiting += 1;
    const ahead = this.#line;
    let leave!: () => void;
    this.#line = new Promise((resolve) => (leave = resolve));
    try {
      await ahead;
      for (;;) {
        if (waitMs !== undefined) await sleep(waitMs + Math.random() * 10);
        waitMs = await this.#tryAdmit(member);
        if (waitMs <= 0) return performance.now();
      }
    } finally {
      this.#waiting -= 1;
      leave();
    }
  }

  /** Takes a place for `member` if the window has one (0), else the milliseconds until one may free. */
  async #tryAdmit(member: string): Promise<number> {
    return Number(await this.#redis.eval(ADMIT, 1, this.#key, this.#windowMs, this.#max, member, this.#leaseMs));
  }
}
