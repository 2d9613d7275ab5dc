import { Cluster, Redis } from 'ioredis';
import type { Worker } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisTokenSource } from '../../../src/auth/redis-token-source.js';
import type { IssuedToken } from '../../../src/auth/token-source.js';
import { settingsSchema } from '../../../src/config/settings-schema.js';
import { ConfigError } from '../../../src/errors/sync-error.js';
import { describeUrl } from '../../../src/redaction/redact.js';
import { createLogger } from '../../../src/logging/logger.js';
import { closeWorker } from '../../../src/queue/close-worker.js';
import { CredentialsPause } from '../../../src/queue/credentials-pause.js';
import { ExportQueue } from '../../../src/queue/export-queue.js';
import { createExportWorker } from '../../../src/queue/export-worker.js';
import { JobsInFlight } from '../../../src/queue/jobs-in-flight.js';
import { lastSuccessfulNight, recordSuccessfulNight } from '../../../src/queue/night-record.js';
import { ensureNightlySchedule, nightlyPlanSettings } from '../../../src/queue/nightly-schedule.js';
import { createRedisConnector, type RedisClient, type RedisConnector } from '../../../src/queue/redis-connection.js';
import { RedisRateGate } from '../../../src/queue/redis-rate-gate.js';
import { planSlices, type SliceRange } from '../../../src/slice/slice-range.js';
import type { Slice } from '../../../src/slice/slice.js';
import { freePort } from '../../helpers/free-port.js';
import { startPrivateRedis } from '../../helpers/private-redis.js';
import { noOpExportSliceJob } from '../../helpers/no-op-export-job.js';
import { startRedisCluster, type RedisCluster } from '../../helpers/redis-cluster.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';
import { until } from '../../helpers/until.js';

const logger = createLogger({ level: 'silent' });

// 10 days × 3 portfolios × 2 report types: 60 slices, three batches of 25.
const RANGE: SliceRange = { from: '2024-01-01', to: '2024-01-10', portfolios: [1, 2, 3], reportTypes: ['index', 'constituent.close'] };

describe('report-sync on a Redis Cluster (three masters with a replica each)', () => {
  let cluster: RedisCluster;
  let connector: RedisConnector;
  const connections: RedisClient[] = [];
  let prefix: string;

  /** A connection as the product makes it from REDIS_URL and REDIS_CLUSTER_NODES, ready. */
  async function connect(): Promise<RedisClient> {
    const redis = connector.connect();
    connections.push(redis);
    await connector.waitUntilReady(redis, { timeoutMs: 10_000 });
    return redis;
  }

  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.destroy();
  });
  afterEach(() => {
    for (const redis of connections.splice(0)) redis.disconnect();
  });

  // A prefix of each test's own, a hash tag like the product's; the cluster goes with the file.
  function freshConnector(): RedisConnector {
    prefix = testPrefix().prefix;
    connector = createRedisConnector(cluster.env.REDIS_URL!, logger, { clusterNodes: cluster.env.REDIS_CLUSTER_NODES, prefix });
    return connector;
  }

  it('refuses a node of the cluster named by REDIS_URL alone, saying to set REDIS_CLUSTER_NODES', async () => {
    const alone = createRedisConnector(cluster.env.REDIS_URL!, logger, { prefix: '{report-sync}' });
    const redis = alone.connect();
    try {
      await expect(alone.waitUntilReady(redis, { timeoutMs: 10_000 })).rejects.toThrow(
        new ConfigError(
          `Redis at redis://${cluster.nodes[0]!.address} is a node of a Redis Cluster: list the cluster's nodes in REDIS_CLUSTER_NODES (host:port, separated by commas); REDIS_URL keeps the password and rediss:// for TLS`,
        ),
      );
    } finally {
      alone.disconnectAll();
    }
  });

  it('connects as a cluster from REDIS_URL and REDIS_CLUSTER_NODES, and says so where it shows Redis', async () => {
    freshConnector();
    const redis = await connect();
    expect(redis).toBeInstanceOf(Cluster);
    expect(connector.location).toBe(
      `redis://${cluster.nodes[0]!.address} (Redis Cluster, starting from ${cluster.nodes
        .slice(0, 3)
        .map((node) => node.address)
        .join(', ')})`,
    );
    // Keys under the prefix live on one master, whose slot is the hash tag's.
    const { master } = await cluster.holderOf(prefix);
    await redis.set(`${prefix}:probe`, '1');
    expect(
      await cluster.cli(
        cluster.nodes.find((node) => node.address === master.address)!,
        'GET',
        `${prefix}:probe`,
      ),
    ).toBe('1\n');
  });

  it('ends a cluster connection told to disconnect while it connects, failing the commands queued for it at once', async () => {
    freshConnector();
    const redis = connector.connect();
    // Queued until the cluster is ready; the disconnect comes first, as BullMQ's close can.
    const queued = redis.get(`${prefix}:nothing`);
    redis.disconnect();
    await expect(queued).rejects.toThrow('Connection is closed.');
    await until(() => redis.status === 'end', 5_000, 'the cluster connection to end');
  });

  it('shares one token across processes, renews it once after a fleet-wide 401 (MGET, a two-key script, MULTI)', async () => {
    freshConnector();
    let issued = 0;
    const issue = async (): Promise<IssuedToken> => {
      issued += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { accessToken: `token-${issued}`, expiresInSeconds: 60 };
    };
    const fleet = await Promise.all([0, 1, 2].map(async () => new RedisTokenSource({ redis: await connect(), prefix, issue })));
    const first = await Promise.all(fleet.flatMap((source) => Array.from({ length: 5 }, () => source.getToken())));
    expect(new Set(first)).toEqual(new Set(['token-1']));
    // Refused within its lifetime: dropped (DROP_REFUSED touches the token and a note beside it).
    const renewed = await Promise.all(fleet.map((source) => source.renewAfterRejection('token-1')));
    expect(new Set(renewed)).toEqual(new Set(['token-2']));
    expect(issued).toBe(2);
    // The renewal after a 401 stored the token and its freshness together (MULTI on one slot).
    expect(await fleet[0]!.renewAfterRejection('token-2')).toBe('token-2');
    expect(issued).toBe(2);
  });

  it('forgets the fleet’s credential refusals in one DEL of three keys', async () => {
    freshConnector();
    const redis = await connect();
    await redis.set(`${prefix}:token:credentials-refused`, '{}');
    await redis.set(`${prefix}:token:export-refused`, '{}');
    expect(await CredentialsPause.forgetRefusals(redis, prefix)).toBe(2);
  });

  it('admits at most max requests per window through the rate gate’s scripts', async () => {
    freshConnector();
    const gate = new RedisRateGate({ redis: await connect(), prefix, max: 2, windowMs: 200, requestTimeoutMs: 10_000 });
    const admitted: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        const permit = await gate.acquire();
        admitted.push(Date.now());
        await permit.answered();
      }),
    );
    admitted.sort((a, b) => a - b);
    for (const start of admitted) expect(admitted.filter((t) => t >= start && t < start + 200).length).toBeLessThanOrEqual(2);
    expect(admitted.at(-1)! - admitted[0]!).toBeGreaterThanOrEqual(400);
  });

  it('queues slices in batches (one existence check a batch), runs them on the product’s worker, and queues the finished ones again', async () => {
    freshConnector();
    const settings = settingsSchema.parse({ queue: { prefix, addBatchSize: 25 } });
    const exportQueue = new ExportQueue({ connection: await connect(), settings });
    const attempted: Slice[] = [];
    let worker: Worker | undefined;
    try {
      expect(await exportQueue.addSlices(planSlices(RANGE), 10)).toMatchObject({ queued: 60, requeued: 0, pending: 0 });
      expect(await exportQueue.addSlices(planSlices(RANGE), 10)).toMatchObject({ queued: 0, requeued: 0, pending: 60 });
      worker = createExportWorker({
        connection: await connect(),
        settings,
        concurrency: 4,
        jobs: [noOpExportSliceJob({ settings, logger, seen: (slice) => void attempted.push(slice) })],
        exportQueue,
        logger,
      });
      await until(async () => (await exportQueue.queue.getCompletedCount()) === 60, 15_000, 'every job to complete');
      expect(attempted).toHaveLength(60);
      expect(await exportQueue.unfinished()).toBe(0);
      // The finished jobs (ZSCOREs, then removals) are queued again.
      expect(await exportQueue.addSlices(planSlices(RANGE), 10, { force: true })).toMatchObject({ queued: 0, requeued: 60, pending: 0 });
      await until(async () => attempted.length === 120, 15_000, 'the requeued jobs to run');
    } finally {
      await worker?.close();
      await exportQueue.close();
    }
  });

  it('registers the nightly schedule once and records the last successful night', async () => {
    freshConnector();
    const redis = await connect();
    const settings = settingsSchema.parse({ queue: { prefix } });
    const exportQueue = new ExportQueue({ connection: redis, settings });
    try {
      const wanted = nightlyPlanSettings(settings);
      expect((await ensureNightlySchedule(exportQueue.queue, wanted, { mode: 'heal', priority: 1 })).action).toBe('created');
      expect((await ensureNightlySchedule(exportQueue.queue, wanted, { mode: 'heal', priority: 1 })).action).toBe('kept');
      expect(await exportQueue.unfinished()).toBe(0);
      await recordSuccessfulNight(redis, prefix, '2024-01-01', new Date(1_704_160_000_000));
      expect(await lastSuccessfulNight(redis, prefix)).toBe(1_704_160_000);
    } finally {
      await exportQueue.close();
    }
  });

  // Last: it leaves the cluster a master short.
  it('waits through a master’s crash until its replica takes over: every job completes, each slice runs once, none fails', async () => {
    freshConnector();
    // Locks outlive the failover (cluster-node-timeout, then an election), as the defaults do; a
    // job left without its worker is taken over soon after its lock ends.
    const settings = settingsSchema.parse({ queue: { prefix, addBatchSize: 25, lockDurationMs: 20_000, stalledIntervalMs: 2_000 } });
    const redis = await connect();
    const exportQueue = new ExportQueue({ connection: redis, settings });
    const attempted: string[] = [];
    const errors: Error[] = [];
    const inFlight = new JobsInFlight();
    let worker: Worker | undefined;
    try {
      expect(await exportQueue.addSlices(planSlices(RANGE), 10)).toMatchObject({ queued: 60 });
      worker = createExportWorker({
        connection: await connect(),
        settings,
        concurrency: 4,
        jobs: [
          noOpExportSliceJob({
            settings,
            logger,
            seen: async (slice) => {
              await new Promise((resolve) => setTimeout(resolve, 50));
              attempted.push(`${slice.portfolioId}-${slice.reportType}-${slice.reportDate}`);
            },
          }),
        ],
        exportQueue,
        logger,
        inFlight,
      });
      worker.on('error', (error) => errors.push(error));
      await until(() => attempted.length >= 12, 10_000, 'the first jobs to run');
      await cluster.crash(prefix);
      // A command whose answer the crash cut off is sent again to the new master. One that had
      // taken a job leaves it active without a worker until its lock ends and a stalled check
      // hands it on; one that had finished a job finds its lock gone, which BullMQ reports.
      await until(async () => (await exportQueue.queue.getCompletedCount()) === 60, 60_000, 'every job to complete').catch(async (error: Error) => {
        throw new Error(`${error.message}: ${await describeJobs(exportQueue, redis)}; errors: ${errors.map((each) => each.message).join(' | ') || 'none'}`);
      });
      expect(attempted).toHaveLength(60);
      expect(new Set(attempted).size).toBe(60);
      expect(await exportQueue.queue.getFailedCount()).toBe(0);
      for (const error of errors) expect(error.message).toMatch(/^Missing lock for job slice-[^ ]+\. moveTo(Finished|Delayed)$/);
    } finally {
      // Also a check: after the crash, the worker's close must end, as a shutdown does.
      if (worker) await closeWorker({ worker, connector, inFlight, logger });
      await exportQueue.close();
    }
  }, 120_000);
});

/** The queue's job counts, and each active job with its lock's time to live, for a failure's message. */
async function describeJobs(exportQueue: ExportQueue, redis: RedisClient): Promise<string> {
  const { queue } = exportQueue;
  const active = await queue.getActive();
  const locks = await Promise.all(active.map(async (job) => `${job.id} (lock ${await redis.pttl(queue.toKey(`${job.id}:lock`))} ms)`));
  return `${JSON.stringify(await queue.getJobCounts())}, active: ${locks.join(', ') || 'none'}`;
}

describe('the connections createRedisConnector makes', () => {
  it('connects to one server from REDIS_URL alone, as before, whatever the prefix', async () => {
    const connector = createRedisConnector(TEST_REDIS_URL, logger, { clusterNodes: ' ', prefix: 'no-hash-tag' });
    const redis = connector.connect();
    try {
      expect(redis).toBeInstanceOf(Redis);
      await connector.waitUntilReady(redis, { timeoutMs: 5_000 });
      expect(await redis.ping()).toBe('PONG');
      expect(connector.location).toBe(describeUrl(TEST_REDIS_URL));
    } finally {
      connector.disconnectAll();
    }
  });

  it('makes a Cluster starting from REDIS_URL’s node and the listed ones, with REDIS_URL’s user, password and TLS on every node', () => {
    const connector = createRedisConnector('rediss://app:p%40ss-word@127.0.0.1:7000/0', logger, {
      clusterNodes: '127.0.0.1:7001, 127.0.0.1:7000,[::1]:7002',
      prefix: '{report-sync}',
    });
    const redis = connector.connect();
    try {
      expect(redis).toBeInstanceOf(Cluster);
      const cluster = redis as Cluster;
      expect((cluster as unknown as { startupNodes: unknown }).startupNodes).toEqual([
        { host: '127.0.0.1', port: 7000 },
        { host: '127.0.0.1', port: 7001 },
        { host: '::1', port: 7002 },
      ]);
      // As for one server: commands wait through an outage, as BullMQ requires.
      expect(cluster.options.redisOptions).toMatchObject({ username: 'app', password: 'p@ss-word', tls: {}, maxRetriesPerRequest: null, enableReadyCheck: true });
      expect(connector.location).toBe('rediss://app:[redacted]@127.0.0.1:7000/0 (Redis Cluster, starting from 127.0.0.1:7000, 127.0.0.1:7001, [::1]:7002)');
      expect(connector.location).not.toContain('ss-word');
    } finally {
      connector.disconnectAll();
    }
  });
});

describe('a Redis Cluster that does not answer', () => {
  it('stops a one-shot command after startup.timeoutMs, naming REDIS_CLUSTER_NODES and the last node that failed', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const connector = createRedisConnector(`redis://127.0.0.1:${a}`, logger, { clusterNodes: `127.0.0.1:${b}`, prefix: '{report-sync}' });
    const redis = connector.connect();
    try {
      const waited = connector.waitUntilReady(redis, { timeoutMs: 800 });
      await expect(waited).rejects.toMatchObject({ code: 'SERVICE_UNREACHABLE' });
      await expect(waited).rejects.toThrow(
        new RegExp(
          `^Redis at redis://127\\.0\\.0\\.1:${a} \\(Redis Cluster, starting from 127\\.0\\.0\\.1:${a}, 127\\.0\\.0\\.1:${b}\\) did not answer within startup\\.timeoutMs \\(800 ms; last problem: 127\\.0\\.0\\.1:(${a}|${b}): .+\\): check REDIS_URL, REDIS_CLUSTER_NODES and that the cluster is up`,
        ),
      );
      expect(connector.down).toBe(true);
    } finally {
      connector.disconnectAll();
    }
  });

  it('stops at once, as bad configuration, when the nodes refuse a connection without their password', async () => {
    // A node asked for the cluster's slots answers NOAUTH before anything else: no cluster needed to hear it.
    const node = await startPrivateRedis({ password: 's3cret' });
    const connector = createRedisConnector(`redis://127.0.0.1:${node.port}`, logger, { clusterNodes: `127.0.0.1:${node.port}`, prefix: '{report-sync}' });
    const redis = connector.connect();
    try {
      const started = performance.now();
      const waited = connector.waitUntilReady(redis, { timeoutMs: 5_000 });
      await expect(waited).rejects.toBeInstanceOf(ConfigError);
      await expect(waited).rejects.toThrow(/refused a connection without a password \(NOAUTH.*\): give it in REDIS_URL, .*; every node of the cluster is asked with it$/);
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      connector.disconnectAll();
      await node.destroy();
    }
  });
});
