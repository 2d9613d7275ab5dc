import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { describeUrl } from '../redaction/redact.js';
import { ConfigError, SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { prefixHashTag } from './prefix-hash-tag.js';
import { parseClusterNodes, type ClusterNodeAddress } from './redis-cluster-nodes.js';

/** Redis's answers to a connection whose password is missing or wrong (Redis 6 and later; `ERR invalid password` before). */
const AUTH_REFUSED = /^(NOAUTH|WRONGPASS)\b|^ERR invalid password/;

/** Longest pause between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 5_000;
/** Longest gap between two lines saying Redis is still down. */
const MAX_REPORT_GAP_MS = 300_000;

/**
 * How a cluster's commands wait through a failover. A crashed master's slots have no answer until
 * the cluster notices (cluster-node-timeout) and elects its replica; ioredis's default (16 tries
 * 100 ms apart) fails the commands meanwhile, which leaves jobs to stall and run twice. Tried every
 * 250 ms for about a minute instead, they wait for the replica as commands to one server wait for
 * its restart.
 */
const FAILOVER_PATIENCE = { retryDelayOnFailover: 250, retryDelayOnClusterDown: 250, maxRedirections: 240 } as const;

/** A connection to one Redis server, or to a Redis Cluster: report-sync asks both the same things. */
export type RedisClient = Redis | Cluster;

/**
 * The Redis connections of one process, sharing one account of Redis trouble, so that an outage
 * is told once per backoff step however many connections (BullMQ duplicates its own) keep trying.
 */
export interface RedisConnector {
  /** `REDIS_URL` as it may be shown: no password; on a cluster, with the nodes it starts from. */
  readonly location: string;
  /** True from a failed connection until one connects again. */
  readonly down: boolean;
  /**
   * A new connection for BullMQ: `maxRetriesPerRequest: null`, so commands wait through a Redis
   * restart instead of failing, and reconnection backs off to 5 s. A `Cluster` when
   * REDIS_CLUSTER_NODES is set.
   */
  connect(): RedisClient;
  /**
   * Resolves once `redis` is connected. With `timeoutMs` (one-shot commands) it stops with
   * `SERVICE_UNREACHABLE` naming REDIS_URL when that passes first; with `signal` (the worker) it
   * stops with `INTERRUPTED` when a shutdown comes first. Otherwise it waits, saying so in the log.
   * @throws ConfigError when REDIS_URL alone names a node of a cluster (REDIS_CLUSTER_NODES unset),
   * or Redis refuses its password (or its lack of one)
   */
  waitUntilReady(redis: RedisClient, options?: { readonly timeoutMs?: number; readonly signal?: AbortSignal }): Promise<void>;
  /**
   * Drops every connection made here, BullMQ's duplicates included, at once: commands waiting for
   * Redis are abandoned and no reconnect timer is left to keep the process alive. For a shutdown
   * while Redis is down, when a polite close would wait for it forever.
   */
  disconnectAll(): void;
}

/** Where Redis is, beside REDIS_URL. */
export interface RedisConnectorOptions {
  /** `REDIS_CLUSTER_NODES`: when set, REDIS_URL and these nodes are a Redis Cluster's. */
  readonly clusterNodes?: string;
  /** `queue.prefix`: on a cluster it must hold a hash tag, so that every key shares one slot. */
  readonly prefix?: string;
}

export function createRedisConnector(redisUrl: string, logger: Logger, options: RedisConnectorOptions = {}): RedisConnector {
  // First: REDIS_URL's default is the first of these nodes.
  const clusterNodes = options.clusterNodes?.trim() ? parseClusterNodes(options.clusterNodes) : undefined;
  const shown = describeUrl(redisUrl);
  // `redis:/:pw@host` (one slash) parses as a URL with no host, its password in the path.
  if (shown === undefined || !/^rediss?:$/.test(new URL(redisUrl).protocol) || new URL(redisUrl).host === '') {
    throw new ConfigError(`REDIS_URL${shown ? ` (${shown})` : ''} must look like redis://host:6379 (or rediss:// for TLS)`);
  }
  const cluster = clusterNodes ? clusterOf({ redisUrl, shown, clusterNodes, prefix: options.prefix }) : undefined;
  const location = cluster ? `${shown} (Redis Cluster, starting from ${cluster.nodes.map(nodeName).join(', ')})` : shown;
  const checkWhat = cluster ? 'REDIS_URL, REDIS_CLUSTER_NODES and that the cluster is up (CLUSTER INFO says cluster_state:ok)' : 'REDIS_URL and that Redis is running';
  let downSince: number | undefined;
  let nextReportAfterMs = 0;
  let lastProblem = 'no answer yet';
  const withPassword = new URL(redisUrl).password !== '';
  const authRefused = (problem: string) =>
    new ConfigError(
      `Redis at ${location} refused ${withPassword ? 'the password in REDIS_URL' : 'a connection without a password'} (${problem}): ` +
        `${withPassword ? 'correct' : 'give'} it in REDIS_URL, as redis://:PASSWORD@host:6379 (redis://USER:PASSWORD@host:6379 for an ACL user)` +
        (cluster ? '; every node of the cluster is asked with it' : ''),
    );

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

  const connections = new Set<RedisClient>();
  const track = <T extends RedisClient>(redis: T): T => {
    connections.add(redis);
    redis.once('end', () => connections.delete(redis));
    // BullMQ duplicates a worker's connection for its blocking commands; keep hold of those too.
    // A cluster's duplicate takes (nodes, options), a server's (options): every argument passes on.
    const duplicate = redis.duplicate.bind(redis) as (...args: unknown[]) => T;
    (redis as unknown as { duplicate: (...args: unknown[]) => T }).duplicate = (...args) => track(duplicate(...args));
    if (redis instanceof Cluster) endWhenDisconnected(redis);
    return redis;
  };

  // disconnectTimeout: ioredis arms a timer of this length at every disconnect() to destroy a socket
  // that does not close, and never clears it when the socket had already failed: with the default
  // 2 s, a command that gives up on an unreachable Redis would linger 2 s before exiting.
  const shared = { maxRetriesPerRequest: null, enableReadyCheck: true, disconnectTimeout: 300 } satisfies RedisOptions;

  const connect = (): RedisClient => {
    const redis: RedisClient = cluster
      ? // The cluster reconnects as a whole (clusterRetryStrategy); each node's own connection is
        // not retried by ioredis but found again through the slots, after a failover too.
        new Cluster([...cluster.nodes], {
          redisOptions: { ...cluster.redisOptions, ...shared },
          clusterRetryStrategy: retryStrategy,
          enableReadyCheck: true,
          ...FAILOVER_PATIENCE,
        })
      : new Redis(redisUrl, { ...shared, retryStrategy });
    redis.on('error', (error: Error & { code?: string; lastNodeError?: Error }) => {
      // A cluster none of whose nodes answered says only that ("Failed to refresh slots cache"):
      // each node's own error, below, said which one and why.
      if (error.lastNodeError === undefined) lastProblem = error.code ?? error.message;
    });
    if (redis instanceof Cluster) {
      redis.on('node error', (error: Error & { code?: string }, node: string) => {
        lastProblem = `${node}: ${error.code ?? error.message}`;
      });
    }
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

  const untilReady = async (redis: RedisClient, options: { timeoutMs?: number; signal?: AbortSignal }): Promise<void> => {
    await new Promise<void>((resolve, reject) => {
      const done = (error?: SyncError) => {
        clearTimeout(timer);
        redis.off('ready', onReady);
        redis.off('error', onError);
        if (redis instanceof Cluster) redis.off('node error', onError);
        options.signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const onReady = () => done();
      const onAbort = () => done(new SyncError('INTERRUPTED', `stopped while waiting for Redis at ${location}`));
      // A refused password is REDIS_URL's to fix: waiting, even forever as a worker does, cannot cure it.
      const onError = (error: Error & { lastNodeError?: Error }) => {
        const refusal = [error, error.lastNodeError].find((candidate) => candidate !== undefined && AUTH_REFUSED.test(candidate.message));
        if (refusal) done(authRefused(refusal.message));
      };
      const timer =
        options.timeoutMs === undefined
          ? undefined
          : setTimeout(
              () =>
                done(
                  new SyncError(
                    'SERVICE_UNREACHABLE',
                    `Redis at ${location} did not answer within startup.timeoutMs (${options.timeoutMs} ms; last problem: ${lastProblem}): check ${checkWhat}`,
                  ),
                ),
              options.timeoutMs,
            );
      redis.once('ready', onReady);
      redis.on('error', onError);
      if (redis instanceof Cluster) redis.on('node error', onError);
      if (options.signal?.aborted) onAbort();
      else options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  };

  const waitUntilReady = async (redis: RedisClient, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<void> => {
    if (redis.status !== 'ready') await untilReady(redis, options);
    if (redis instanceof Redis) await refuseClusterNode(redis, location, options.signal);
  };

  return {
    location,
    get down() {
      return downSince !== undefined;
    },
    connect,
    waitUntilReady,
    disconnectAll: () => {
      const gone = new Error(`the connections to Redis at ${location} were dropped: this process is stopping`);
      for (const redis of connections) {
        redis.disconnect();
        // ioredis leaves a connection that was between two reconnection attempts in that state, with
        // the commands queued for it waiting forever (and BullMQ's close waiting on them).
        endConnection(redis, gone);
      }
      connections.clear();
    },
  };
}

/**
 * Ends a connection as ioredis ends one: status 'end', and the commands queued for it failed with
 * `error`, or their callers (BullMQ's wait for the next job, then its close) would wait forever.
 */
function endConnection(redis: RedisClient, error: Error): void {
  const internals = redis as unknown as { setStatus(status: string): void; flushQueue(error: Error): void };
  if (redis.status !== 'end') internals.setStatus('end');
  internals.flushQueue(error);
}

/**
 * Makes a cluster told to disconnect always reach 'end', failing the commands queued for it, which
 * BullMQ waits for when it closes a worker. After a master's crash, BullMQ's reconnects of its
 * blocking connection can leave the cluster without ioredis's handler for its next 'close' (armed
 * once per connect), or with no node left to close: it would stay 'close' or 'disconnecting' for
 * good, and the worker's close (a shutdown with it) would wait forever.
 */
function endWhenDisconnected(cluster: Cluster): void {
  const internals = cluster as unknown as { reconnectTimeout?: unknown };
  // Told to disconnect and not to connect since: BullMQ's own reconnect is a disconnect, then a
  // connect at once, which must be left to run.
  let leaving = false;
  const endIfLeftClosed = () => {
    if (!leaving || internals.reconnectTimeout || (cluster.status !== 'close' && cluster.status !== 'disconnecting')) return;
    // In ioredis's words for a closed connection, which BullMQ takes as one and does not report.
    endConnection(cluster, new Error('Connection is closed.'));
  };
  // Looked at after ioredis's handler, if one is armed: it has moved on by then.
  cluster.on('close', () => setImmediate(endIfLeftClosed));
  const disconnect = cluster.disconnect.bind(cluster);
  cluster.disconnect = (reconnect = false) => {
    leaving = !reconnect;
    disconnect(reconnect);
    // No node to wait for: no 'close' will come.
    if (!reconnect && cluster.nodes().length === 0) setImmediate(endIfLeftClosed);
  };
  const connect = cluster.connect.bind(cluster);
  cluster.connect = () => {
    leaving = false;
    return connect();
  };
}

/**
 * A node of a cluster reached as one server answers MOVED for most keys, which BullMQ would report
 * as an unexpected error somewhere in the queue: said at start instead, with what to set.
 */
async function refuseClusterNode(redis: Redis, location: string, signal: AbortSignal | undefined): Promise<void> {
  let info: string | undefined;
  let onAbort: (() => void) | undefined;
  try {
    // A Redis gone again at once would hold the answer back: a shutdown must not wait for it.
    const stopped = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    info = await Promise.race([redis.info('cluster'), stopped]);
  } catch {
    // A Redis that refuses INFO (some managed ones rename it) is taken as what REDIS_URL says.
    return;
  } finally {
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
  if (info === undefined) return;
  if (/^cluster_enabled:1\b/m.test(info)) {
    throw new ConfigError(
      `Redis at ${location} is a node of a Redis Cluster: list the cluster's nodes in REDIS_CLUSTER_NODES (host:port, separated by commas); REDIS_URL keeps the password and rediss:// for TLS`,
    );
  }
}

/** A Redis Cluster as REDIS_URL and REDIS_CLUSTER_NODES name it. */
interface ClusterAddress {
  /** REDIS_URL's node, then the listed ones: any one that answers tells ioredis of the rest. */
  readonly nodes: readonly ClusterNodeAddress[];
  /** What every node shares: REDIS_URL's user, password and TLS. */
  readonly redisOptions: Pick<RedisOptions, 'username' | 'password' | 'tls'>;
}

/**
 * REDIS_URL and REDIS_CLUSTER_NODES as a cluster, checked: database 0 only (a cluster has no
 * other), and a `queue.prefix` whose hash tag keeps every key of report-sync in one slot, which
 * BullMQ's scripts, the token's transaction and the rate gate's script all need.
 */
function clusterOf(given: { redisUrl: string; shown: string; clusterNodes: readonly ClusterNodeAddress[]; prefix: string | undefined }): ClusterAddress {
  const { redisUrl, shown, prefix } = given;
  const url = new URL(redisUrl);
  const database = url.pathname.replace(/^\//, '');
  if (database !== '' && database !== '0') {
    throw new ConfigError(`REDIS_URL (${shown}) selects database ${database}, but a Redis Cluster has only database 0: remove /${database} from REDIS_URL`);
  }
  if (prefix !== undefined && prefixHashTag(prefix) === undefined) {
    throw new ConfigError(
      `queue.prefix (${prefix}) holds no hash tag, so on a Redis Cluster the queue's keys would land in different slots and BullMQ's scripts would fail: ` +
        'put braces around it, e.g. {report-sync} (REPORT_SYNC_QUEUE__PREFIX or queue.prefix in the settings file)',
    );
  }
  const own = { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port === '' ? 6379 : Number(url.port) };
  const nodes = [own, ...given.clusterNodes].filter((node, i, all) => all.findIndex((other) => other.host === node.host && other.port === node.port) === i);
  return {
    nodes,
    redisOptions: {
      username: url.username === '' ? undefined : decoded(url.username),
      password: url.password === '' ? undefined : decoded(url.password),
      tls: url.protocol === 'rediss:' ? {} : undefined,
    },
  };
}

/** A URL's user or password as sent: percent-decoded, or as written when it is not valid encoding. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function nodeName(node: ClusterNodeAddress): string {
  return node.host.includes(':') ? `[${node.host}]:${node.port}` : `${node.host}:${node.port}`;
}
