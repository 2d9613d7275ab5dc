import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { UsageError } from '../errors/sync-error.js';
import { listenOn } from '../http/listen-on.js';
import type { Logger } from '../logging/logger.js';
import { parseSelection } from '../selection/parse-selection.js';
import { checkPlausibleDate } from '../dates/plausible-date.js';
import { printableText } from '../text/printable-text.js';
import { REPORT_TYPES, type ReportType } from '../reports/report-types.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';
import { bullBoardRouter } from './bull-board-router.js';
import { coverageView, type CoverageDefaults } from './coverage-view.js';
import { dashboardAccess, isLoopback } from './dashboard-access.js';
import { parseDashboardQuery, type DashboardQuery } from './dashboard-query.js';
import { failuresView } from './failures-view.js';
import type { QueueView } from './queue-view.js';
import { RequestGate } from './request-gate.js';
import { sliceView } from './slice-view.js';

export interface DashboardServerOptions {
  readonly ledger: Ledger;
  /** The export queue, when `REDIS_URL` is set: the queue panel, queued and running cells, and Bull Board. */
  readonly queue?: QueueView;
  readonly defaults: CoverageDefaults;
  /** The warehouse as it may be shown (no password). */
  readonly warehouse: string;
  /** The `--config` file, repeated in the commands the page suggests. */
  readonly configFile?: string;
  readonly host: string;
  /**
   * `dashboard.token`: when set, every route asks for it (see `dashboardAccess`); required to
   * listen anywhere but loopback.
   */
  readonly token?: string | null;
  /** 0 picks any free port (tests). */
  readonly port: number;
  readonly logger: Logger;
  readonly version: string;
}

/** A listening dashboard; its owner must `close()` it. */
export interface DashboardServer {
  /** `http://host:port/`, with the port actually bound. */
  readonly url: string;
  close(): Promise<void>;
}

/** Where Bull Board is mounted. */
export const BULL_BOARD_PATH = '/queues';

const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'dashboard.html', type: 'text/html; charset=utf-8' },
  '/assets/dashboard.js': { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
  '/assets/dashboard.css': { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
};

// Nothing the page loads may come from elsewhere; Bull Board's React UI sets inline styles.
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

/**
 * Serves the coverage dashboard, GET and HEAD only. On loopback it answers only loopback host names,
 * defeating DNS rebinding; cross-site and unauthenticated requests are refused (`dashboardAccess`).
 * @throws ConfigError when it cannot listen on host:port, or would listen beyond loopback without a token
 */
export async function startDashboardServer(options: DashboardServerOptions): Promise<DashboardServer> {
  const { ledger, queue, logger } = options;
  const assets = new Map(Object.entries(ASSETS).map(([path, asset]) => [path, { type: asset.type, body: readFileSync(new URL(`./assets/${asset.file}`, import.meta.url)) }]));
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const loopback = isLoopback(options.host);
  let allowedHosts: Set<string> | undefined;

  app.use((req: Request, res: Response, next: NextFunction) => {
    res.set({ 'Content-Security-Policy': CONTENT_SECURITY_POLICY, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store' });
    if (allowedHosts && !allowedHosts.has((req.headers.host ?? '').toLowerCase())) {
      res
        .status(421)
        .type('text/plain')
        .send(`this dashboard answers only at ${[...allowedHosts].join(', ')}\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD' && !req.path.startsWith(BULL_BOARD_PATH)) {
      res.status(405).set('Allow', 'GET, HEAD').type('text/plain').send('the dashboard is read-only: use GET\n');
      return;
    }
    next();
  });
  app.use(dashboardAccess({ token: options.token, host: options.host }));

  for (const [path, asset] of assets) {
    app.get(path, (_req, res) => {
      res.type(asset.type).send(asset.body);
    });
  }

  // Browsers ask for it unprompted; an empty answer keeps a 404 out of their console.
  app.get('/favicon.ico', (_req, res) => {
    res.status(204).end();
  });

  const params = (req: Request) => new URLSearchParams(req.url.split('?')[1] ?? '');
  const dateWindow = { earliest: options.defaults.earliest, timeZone: options.defaults.timeZone };
  // The grid and the failures are counted in the warehouse and built in memory: a few at once.
  const gate = new RequestGate({ concurrent: 2, waiting: 8, maxWaitMs: 1000, retryAfterSeconds: 2 });

  app.get('/api/meta', (_req, res) => {
    res.json({
      version: options.version,
      warehouse: options.warehouse,
      reportTypes: REPORT_TYPES,
      defaults: { portfolios: options.defaults.portfolios, reportTypes: options.defaults.reportTypes },
      queue: queue ? { board: BULL_BOARD_PATH } : null,
    });
  });

  // The query is read before the gate, so a bad one is refused at once rather than after a wait.
  const readQuery = (req: Request, res: Response, next: NextFunction) => {
    res.locals.query = parseDashboardQuery(params(req), dateWindow);
    next();
  };

  app.get('/api/coverage', readQuery, gate.handler, async (_req, res) => {
    const started = performance.now();
    const query = res.locals.query as DashboardQuery;
    const queued = queue ? await queue.slices().catch((error: unknown) => ({ unreachable: messageOf(error) })) : undefined;
    const view = await coverageView({ ledger, query, defaults: options.defaults, queued, nextTurn: () => gate.nextTurn() });
    res.json({ ...view, elapsedMs: Math.round(performance.now() - started) });
  });

  app.get('/api/failures', readQuery, gate.handler, async (_req, res) => {
    const query = res.locals.query as DashboardQuery;
    if (!query.from || !query.to) throw new UsageError('from and to are required');
    const view = await failuresView(ledger, { from: query.from, to: query.to, portfolios: query.portfolios, reportTypes: query.reportTypes }, options.configFile);
    res.json(view);
  });

  app.get('/api/slice', async (req, res) => {
    const search = params(req);
    const required = (name: string) => {
      const value = search.get(name);
      if (!value) throw new UsageError(`${name} is required`);
      return value;
    };
    const portfolioId = parseSelection.portfolios(required('portfolio'));
    const reportType = parseSelection.reportTypes(required('reportType'));
    if (portfolioId.length !== 1 || reportType.length !== 1) throw new UsageError('one portfolio and one report type');
    const reportDate = parseSelection.date(required('date'));
    checkPlausibleDate(reportDate, 'date', dateWindow);
    res.json(await sliceView(ledger, { portfolioId: portfolioId[0]!, reportType: reportType[0] as ReportType, reportDate }, queue));
  });

  app.get('/api/queue', async (_req, res) => {
    res.json(queue ? await queue.snapshot() : null);
  });

  if (queue) app.use(BULL_BOARD_PATH, bullBoardRouter(queue.queue, BULL_BOARD_PATH));

  app.use((_req: Request, res: Response) => {
    res.status(404).type('text/plain').send('not found: the dashboard is at /\n');
  });
  // A bad parameter is the page's (or the user's) to fix: 400 with the reason. Anything else is
  // ours: 500 with one line, and one log line an operator will see.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (error instanceof UsageError) {
      res.status(400).json({ error: error.message });
      return;
    }
    logger.error({ err: error, path: req.path }, 'dashboard request failed');
    res.status(500).json({ error: printableText(messageOf(error), 400) });
  });

  const server = createServer(app);
  await listenOn(server, options.host, options.port, { serves: 'the dashboard', portSetting: '--port' });
  const port = (server.address() as AddressInfo).port;
  const hostInUrl = options.host.includes(':') ? `[${options.host}]` : options.host;
  if (loopback) allowedHosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${hostInUrl}:${port}`.toLowerCase()]);
  server.on('error', (error) => logger.error({ err: error }, 'dashboard server error'));
  let closing: Promise<void> | undefined;
  return {
    url: `http://${hostInUrl}:${port}/`,
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Browsers keep connections open; without this, close() waits for them to time out.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
