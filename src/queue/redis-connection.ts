import { Redis } from 'ioredis';
import { describeUrl } from '../redaction/redact.js';
import { ConfigError, SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';

/** Longest pause between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 5_000;
/** Longest gap between two lines saying Redis is still down. */
const MAX_REPORT_GAP_MS = 300_000;

/**
 * The Redis connections of one process, sharing one account of Redis trouble, so that an outage
 * is told once per backoff step however many connections (BullMQ duplicates its own) keep trying.
 */
export interface RedisConnector {
  /** `REDIS_URL` as it may be shown: no password. */
  readonly location: string;
  /** True from a failed connection until one connects again. */
  readonly down: boolean;
  /**
   * A new connection for BullMQ: `maxRetriesPerRequest: null`, so commands wait through a Redis
   * restart instead of failing, and reconnection backs off to 5 s.
   */
  connect(): Redis;
  /**
   * Resolves once `redis` is connected. With `timeoutMs` (one-shot commands) it stops with
   * `SERVICE_UNREACHABLE` naming REDIS_URL when that passes first; with `signal` (the worker) it
   * stops with `INTERRUPTED` when a shutdown comes first. Otherwise it waits, saying so in the log.
   */
  waitUntilReady(redis: Redis, options?: { readonly timeoutMs?: number; readonly signal?: AbortSignal }): Promise<void>;
  /**
   * Drops every connection made here, BullMQ's duplicates included, at once: commands waiting for
   * Redis are abandoned and no reconnect timer is left to keep the process alive. For a shutdown
   * while Redis is down, when a polite close would wait for it forever.
   */
  disconnectAll(): void;
}

export function createRedisConnector(redisUrl: string, logger: Logger): RedisConnector {
  const location = describeUrl(redisUrl);
  // `redis:/:pw@host` (one slash) parses as a URL with no host, its password in the path.
  if (location === undefined || !/^rediss?:$/.test(new URL(redisUrl).protocol) || new URL(redisUrl).host === '') {
    throw new ConfigError(`REDIS_URL${location ? ` (${location})` : ''} must look like redis://host:6379 (or rediss:// for TLS)`);
  }
  let downSince: number | undefined;
  let nextReportAfterMs = 0;
  let lastProblem = 'no answer yet';

  // Called by every connection of the process, BullMQ's duplicates included (they copy the
  // options, not the listeners): the one place that hears about every failed attempt.
  const retryStrategy = (times: number): number => {
    const now = Date.now();
    downSince ??= now;
    const downForMs = now - downSince;
    const delayMs = Math.min(250 * 2 ** Math.min(times - 1, 10), MAX_RECONNECT_DELAY_MS);
    if (downForMs >= nextReportAfterMs) {
      logger.warn({ redis: location, problem: lastProblem, downForMs, retryInMs: delayMs }, 'Redis connection trouble; reconnecting');
      nextReportAfterMs = Math.min(Math.max(1_000, downForMs * 2), downForMs + MAX_REPORT_GAP_MS);
    }
    return delayMs;
  };

  const connections = new Set<Redis>();
  const track = (redis: Redis): Redis => {
    connections.add(redis);
    redis.once('end', () => connections.delete(redis));
    // BullMQ duplicates a worker's connection for its blocking commands; keep hold of those too.
    const duplicate = redis.duplicate.bind(redis);
    redis.duplicate = (override) => track(duplicate(override));
    return redis;
  };

  const connect = (): Redis => {
    // disconnectTimeout: ioredis arms a timer of this length at every disconnect() to destroy a socket
    // that does not close, and never clears it when the socket had already failed: with the default
    // 2 s, a command that gives up on an unreachable Redis would linger 2 s before exiting.
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true, retryStrategy, disconnectTimeout: 300 });
    redis.on('error', (error: Error & { code?: string }) => {
      lastProblem = error.code ?? error.message;
    });
    redis.on('ready', () => {
      // A connection that was up and closes says nothing in 'error' before ioredis retries it.
      lastProblem = 'connection lost';
      if (downSince === undefined) return;
      logger.info({ redis: location, downForMs: Date.now() - downSince }, 'Redis answers again');
      downSince = undefined;
      nextReportAfterMs = 0;
    });
    return track(redis);
  };

  const waitUntilReady = async (redis: Redis, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<void> => {
    if (redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const done = (error?: SyncError) => {
        clearTimeout(timer);
        redis.off('ready', onReady);
        options.signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const onReady = () => done();
      const onAbort = () => done(new SyncError('INTERRUPTED', `stopped while waiting for Redis at ${location}`));
      const timer =
        options.timeoutMs === undefined
          ? undefined
          : setTimeout(
              () =>
                done(
                  new SyncError(
                    'SERVICE_UNREACHABLE',
                    `Redis at ${location} did not answer within startup.timeoutMs (${options.timeoutMs} ms; last problem: ${lastProblem}): check REDIS_URL and that Redis is running`,
                  ),
                ),
              options.timeoutMs,
            );
      redis.once('ready', onReady);
      if (options.signal?.aborted) onAbort();
      else options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  };

  return {
    location,
    get down() {
      return downSince !== undefined;
    },
    connect,
    waitUntilReady,
    disconnectAll: () => {
      const gone = new Error(`Redis at ${location} is down and this process is stopping`);
      for (const redis of connections) {
        redis.disconnect();
        // ioredis leaves a connection that was between two reconnection attempts in that state, with
        // the commands queued for it waiting forever (and BullMQ's close waiting on them): end it and
        // fail them, so that every await on Redis settles and nothing is left running.
        const internals = redis as unknown as { setStatus(status: string): void; flushQueue(error: Error): void };
        if (redis.status !== 'end') internals.setStatus('end');
        internals.flushQueue(gone);
      }
      connections.clear();
    },
  };
}
