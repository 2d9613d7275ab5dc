import { getMaxListeners, setMaxListeners } from 'node:events';
import type { Dispatcher } from 'undici';
import { requestPasswordGrant } from '../auth/password-grant.js';
import { FirstContactGuard } from '../auth/first-contact-guard.js';
import { MeteredTokenSource } from '../auth/metered-token-source.js';
import { TokenLifetimeBounds } from '../auth/token-lifetime-bounds.js';
import { identityProviderWaitOptions } from '../auth/identity-provider-wait-options.js';
import { TokenRefresher } from '../auth/token-refresher.js';
import type { TokenSource } from '../auth/token-source.js';
import type { AppConfig } from '../config/load-config.js';
import type { Settings } from '../config/settings-schema.js';
import type { UpstreamConfig } from '../config/upstream-config.js';
import { createHttpAgent } from '../http/create-http-agent.js';
import { ExportClient } from '../gateway/export-client.js';
import type { RequestGate } from '../gateway/request-gate.js';
import { SpoolDirectory } from '../gateway/spool-directory.js';
import type { Logger } from '../logging/logger.js';
import type { SyncMetrics } from '../metrics/sync-metrics.js';
import { Ledger } from '../warehouse/ledger/ledger.js';
import { connectWarehouse } from '../warehouse/connect-warehouse.js';
import type { WarehouseHandle } from '../warehouse/engine/warehouse-engine.js';
import { SliceLoader } from '../warehouse/loading/slice-loader.js';
import { retiredSettingsIn } from '../config/retired-settings.js';
import { jobsAtOnce } from '../queue/jobs-at-once.js';

/** Everything the export job needs, built once per process; `close()` releases it all. */
export interface SyncServices {
  readonly settings: Settings;
  readonly logger: Logger;
  readonly warehouse: WarehouseHandle;
  readonly ledger: Ledger;
  readonly loader: SliceLoader;
  readonly client: ExportClient;
  readonly tokens: TokenSource;
  readonly metrics: SyncMetrics | undefined;
  close(): Promise<void>;
}

export interface SyncServicesOptions {
  readonly config: AppConfig;
  readonly upstream: UpstreamConfig;
  readonly logger: Logger;
  /** Admits export requests at the fleet's rate limit (queue mode). */
  readonly gate?: RequestGate;
  /** A shutdown: waits for the identity provider end at once. */
  readonly signal?: AbortSignal;
  /** Where slices, requests and tokens are counted, when the process exposes metrics. */
  readonly metrics?: SyncMetrics;
  /** A token source other than the in-process refresher (the queue's shared one). */
  readonly tokens?: (issue: () => ReturnType<typeof requestPasswordGrant>, dispatcher: Dispatcher) => TokenSource;
}

/**
 * Opens the spool directory (see {@link SpoolDirectory}), then (and migrates) the warehouse (see
 * {@link connectWarehouse}), the keep-alive pool, the token source and the export client, in that
 * order; on failure, closes what was opened.
 */
export async function createSyncServices(options: SyncServicesOptions): Promise<SyncServices> {
  const { config, upstream, logger } = options;
  const { settings } = config;
  if (options.signal) allowListenersPerSlice(options.signal, jobsAtOnce({ concurrency: settings.concurrency, prefetch: settings.queue.prefetch }));
  // First: a missing or unwritable TMPDIR stops the command (exit 2) before any connection is made,
  // and killed processes' leftovers are gone before this one adds bodies of its own.
  const spool = await SpoolDirectory.open({ logger });
  let warehouse: WarehouseHandle;
  let lacking: readonly string[];
  let rowPath: string | undefined;
  try {
    ({ lacking, rowPath, ...warehouse } = await connectWarehouse(config, { purpose: 'write', signal: options.signal, logger }));
  } catch (error) {
    await spool.close();
    throw error;
  }
  // Said once: on MySQL the path depends on the server (local_infile), and its speed with it.
  logger.info({ rowPath }, `slices' rows are written with ${rowPath}`);
  // Not a reason to stop (nothing is lost with them), but the analysts' queries of a missing view fail.
  if (lacking.length > 0) {
    logger.warn(
      { lacking },
      `the warehouse lacks ${lacking.join(', ')}, which report-sync made: syncing goes on; run report-sync migrate to re-create ${lacking.length === 1 ? 'it' : 'them'}`,
    );
  }
  let agent: Dispatcher | undefined;
  try {
    if (!settings.http.verifyTls) logger.warn('http.verifyTls is false: TLS certificates are NOT verified; use this only on a test rig');
    for (const retired of retiredSettingsIn(settings)) logger.warn(retired);
    agent = createHttpAgent(settings.http);
    const dispatcher = agent;
    const { metrics } = options;
    const firstContact = new FirstContactGuard(upstream.tokenUrl);
    const metered = metrics ? new MeteredTokenSource(metrics) : undefined;
    const lifetime = new TokenLifetimeBounds({
      maxSeconds: settings.token.maxLifetimeSeconds,
      onAdjusted: ({ given, usedSeconds, message }) => logger.warn({ expiresIn: given, usedSeconds }, message),
    });
    const grant = () =>
      requestPasswordGrant({
        dispatcher,
        tokenUrl: upstream.tokenUrl,
        credentials: upstream.credentials,
        timeoutMs: settings.token.requestTimeoutMs,
        signal: options.signal,
        lifetime,
      });
    const issue = firstContact.issue(metered ? metered.issue(grant) : grant);
    const source =
      options.tokens?.(issue, dispatcher) ??
      new TokenRefresher({
        issue,
        refreshMarginSeconds: settings.token.refreshMarginSeconds,
        ...identityProviderWaitOptions(settings.token, logger, options.signal, metrics),
      });
    const tokens = firstContact.tokens(metered ? metered.tokens(source) : source);
    const client = new ExportClient({
      baseUrl: upstream.baseUrl,
      tenantId: upstream.tenantId,
      tokens,
      dispatcher,
      maxDownloadBytes: settings.limits.maxDownloadBytes,
      spoolMemoryBytes: settings.limits.spoolMemoryBytes,
      spool,
      bodyTimeoutMs: settings.http.bodyTimeoutMs,
      downloads: { atOnce: settings.concurrency, maxRetryAfterMs: settings.retry.maxRetryAfterMs },
      signal: options.signal,
      gate: options.gate,
      onAnswer: metrics && ((status, seconds) => metrics.exportAnswered(status, seconds)),
    });
    const ledger = new Ledger(warehouse);
    return {
      settings,
      logger,
      metrics,
      warehouse,
      ledger,
      loader: new SliceLoader({
        warehouse,
        ledger,
        batchRows: settings.warehouse.batchRows,
        slicesPerCommit: settings.warehouse.slicesPerCommit,
        onUpkeepError: (error) =>
          logger.warn(
            { err: error },
            "the warehouse's upkeep after a commit failed (MySQL: folding the rows appended to report_loads_monthly): the slices are committed and the counts stay right; until a fold succeeds (tried again after later commits) the table grows by a row per ledger change",
          ),
      }),
      client,
      tokens,
      close: async () => {
        await dispatcher.close();
        await warehouse.close();
        await spool.close();
      },
    };
  } catch (error) {
    await agent?.close();
    await warehouse.close();
    await spool.close();
    throw error;
  }
}

/** Listeners one slice in hand may hold on the shutdown signal at once: its request's, and its retry's wait or its token's. */
const SHUTDOWN_LISTENERS_PER_SLICE = 2;
/** Listeners of the process's own on the shutdown signal (its connections' waits, alerts, the metrics server). */
const SHUTDOWN_LISTENERS_OF_THE_PROCESS = 10;

/**
 * Raises the shutdown signal's listener limit to what `slices` in hand at once may hold. Each
 * request and wait listens while it lasts and then stops, so dozens at once are no leak; at Node's
 * default of ten, a worker of concurrency 16 warned of one on every start.
 */
function allowListenersPerSlice(signal: AbortSignal, slices: number): void {
  const needed = SHUTDOWN_LISTENERS_PER_SLICE * slices + SHUTDOWN_LISTENERS_OF_THE_PROCESS;
  if (getMaxListeners(signal) < needed) setMaxListeners(needed, signal);
}
