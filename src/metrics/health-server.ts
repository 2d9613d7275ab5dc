import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenOn } from '../http/listen-on.js';
import type { Logger } from '../logging/logger.js';
import { printableText } from '../text/printable-text.js';
import type { SyncMetrics } from './sync-metrics.js';
import { settleWithin } from '../runtime/settle-within.js';

/**
 * One thing the process needs before it can do useful work (Redis, the warehouse), asked on every
 * `/readyz` so that an orchestrator stops sending work, or an operator sees why, while it is down.
 */
export interface ReadinessCheck {
  /** Shown before the check's line in `/readyz`, e.g. `redis`. */
  readonly name: string;
  /**
   * Undefined when ready; otherwise one line saying what is wrong and where, e.g.
   * `Redis at redis://host:6379 is unreachable (ECONNREFUSED)`. Throwing, or taking longer than
   * `checkTimeoutMs`, counts as not ready.
   */
  check(): Promise<string | undefined>;
}

export interface HealthServerOptions {
  /** Interface to listen on, e.g. `0.0.0.0` in a container, `127.0.0.1` on a shared host. */
  readonly host: string;
  /**
   * 0 picks any free port (several processes on one host); read the chosen one from
   * {@link HealthServer.port}, or from `/healthz`.
   */
  readonly port: number;
  /** The setting (or flag) that picks the port, named when it cannot be served. @defaultValue `metrics.port` */
  readonly portSetting?: string;
  readonly metrics: SyncMetrics;
  readonly readiness: readonly ReadinessCheck[];
  /** Told when readiness or metrics collection changes state, never per request. */
  readonly logger: Logger;
  /**
   * Longest wait for one readiness check: a hung check reports not ready instead of hanging the
   * probe past the orchestrator's timeout (which would not say why). Keep it under that timeout.
   * @defaultValue 1500
   */
  readonly checkTimeoutMs?: number;
}

/** A listening health server; its owner must `close()` it or the process will not exit. */
export interface HealthServer {
  /** `http://host:port`, with the port actually bound. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and drops open connections, keep-alive ones included; safe to call twice. */
  close(): Promise<void>;
}

const TEXT = 'text/plain; charset=utf-8';
const ROUTES = new Set(['/metrics', '/healthz', '/readyz']);

/**
 * Serves `/metrics`, `/healthz` (the event loop answers; with port and pid to tell processes apart)
 * and `/readyz` (each readiness check, with why it fails; `/metrics` shows them as
 * `report_sync_ready`) on a port of its own, so probes and scrapes never compete with the work.
 * Resolves once listening.
 * @throws ConfigError naming host:port and the port setting when it cannot listen there (EADDRINUSE, EACCES)
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const checkTimeoutMs = options.checkTimeoutMs ?? 1500;
  const { logger, metrics, readiness } = options;
  // Logged on change only: a probe every few seconds must not fill the log with the same line.
  let wasReady: boolean | undefined;
  let metricsFailing = false;

  const runChecks = (): Promise<Array<string | undefined>> => Promise.all(readiness.map((check) => runCheck(check, checkTimeoutMs)));
  // The same checks at each scrape, so that an alert can see a worker that is up but not ready.
  metrics.setReadinessSource(async () => {
    const reasons = await runChecks();
    return Object.fromEntries(readiness.map((check, i) => [check.name, reasons[i] === undefined]));
  });

  const answerReadiness = async (res: ServerResponse): Promise<void> => {
    const reasons = await runChecks();
    const ready = reasons.every((reason) => reason === undefined);
    const lines = readiness.map((check, i) => `${check.name}: ${reasons[i] ?? 'ok'}`);
    if (!ready && wasReady !== false) {
      logger.warn({ notReady: lines.filter((_, i) => reasons[i] !== undefined) }, 'not ready');
    } else if (ready && wasReady === false) {
      logger.info('ready again');
    }
    wasReady = ready;
    send(res, ready ? 200 : 503, TEXT, `${[ready ? 'ready' : 'not ready', ...lines].join('\n')}\n`);
  };

  const answerMetrics = async (res: ServerResponse): Promise<void> => {
    let body: string;
    try {
      body = await metrics.metrics();
    } catch (error) {
      const reason = oneLine(error instanceof Error ? error.message : String(error));
      if (!metricsFailing) logger.warn({ reason }, 'metrics collection failed; /metrics answers 500 until it works again');
      metricsFailing = true;
      send(res, 500, TEXT, `could not collect metrics: ${reason}\n`);
      return;
    }
    if (metricsFailing) logger.info('metrics collection works again');
    metricsFailing = false;
    send(res, 200, metrics.contentType, body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    if (!ROUTES.has(path)) return send(res, 404, TEXT, `not found: try /metrics, /healthz or /readyz\n`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return send(res, 405, TEXT, `method not allowed: use GET or HEAD\n`);
    }
    if (path === '/healthz') return send(res, 200, TEXT, `ok\nport: ${port}\npid: ${process.pid}\n`);
    if (path === '/readyz') return answerReadiness(res);
    return answerMetrics(res);
  };

  // Known once listening; no request is answered before.
  let port = options.port;
  const server = createServer((req, res) => {
    // A client hanging up mid-answer is its own business: without these, the error would be
    // thrown from an emitter with no listener and take the worker down with it.
    req.on('error', ignore);
    res.on('error', ignore);
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, TEXT, `internal error: ${oneLine(String(error))}\n`);
      else res.destroy();
    });
  });

  await listenOn(server, options.host, options.port, { serves: 'metrics and health checks', portSetting: options.portSetting ?? 'metrics.port' });
  server.on('error', (error) => logger.error({ err: error }, 'health server error'));

  port = (server.address() as AddressInfo).port;
  const hostInUrl = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${hostInUrl}:${port}`,
    port,
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // close() alone waits for every keep-alive socket to time out, holding the process open.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** The check's reason, or undefined when ready; never throws and never waits past `timeoutMs`. */
async function runCheck(check: ReadinessCheck, timeoutMs: number): Promise<string | undefined> {
  try {
    const reason = await settleWithin(
      Promise.resolve().then(() => check.check()),
      timeoutMs,
      () => `no answer within ${timeoutMs} ms`,
    );
    if (reason === undefined) return undefined;
    return oneLine(reason) || 'not ready (the check gave no reason)';
  } catch (error) {
    return `check failed: ${oneLine(error instanceof Error ? error.message : String(error))}`;
  }
}

/** Text from outside (an error message) as one line of a plain-text answer. */
function oneLine(text: string): string {
  return printableText(text.replace(/[\r\n]+/g, ' ').trim());
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  // Node drops the body of an answer to HEAD by itself; the headers stay the same as for GET.
  res.end(body);
}

function ignore(): void {}
