import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { isIsoDate } from '../dates/is-iso-date.js';
import { weekdayOf } from '../dates/report-date.js';
import { EXPORT_FORMATS, isReportType, type ReportType } from '../reports/report-types.js';
import { renderJson, renderZip } from './render-export.js';
import { lazySyntheticReport, type SyntheticSizes } from './synthetic-reports.js';

/** The credentials the simulator accepts. */
export interface SimulatorCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly username: string;
  readonly password: string;
  readonly tenantId: string;
}

/** Random misbehaviour, each a probability from 0 to 1 per export request. */
export interface SimulatorFaults {
  /** Answer 500. */
  readonly serverErrorRate?: number;
  /** Destroy the socket before answering. */
  readonly resetRate?: number;
  /** Send the full Content-Length, part of the body, then destroy the socket. */
  readonly truncateRate?: number;
}

/** One scripted answer to one export request of a slice. */
export type ScriptStep =
  | { readonly status: number; readonly body?: string | Buffer; readonly headers?: Readonly<Record<string, string>> }
  | { readonly fault: 'reset' | 'truncate' }
  | { readonly delayMs: number };

export interface GatewaySimulatorOptions extends SyntheticSizes {
  /** @defaultValue 0 (any free port) */
  readonly port?: number;
  /** @defaultValue 127.0.0.1 */
  readonly host?: string;
  /** Path the identity provider lives under, as Keycloak's `/auth`. @defaultValue '/auth' */
  readonly authPath?: string;
  /** Path the gateway lives under. @defaultValue '' */
  readonly apiPath?: string;
  /** @defaultValue 'report-sync-demo' */
  readonly realm?: string;
  readonly credentials?: Partial<SimulatorCredentials>;
  /** May be fractional for tests; `expires_in` is the rounded value. @defaultValue 300 */
  readonly tokenLifetimeSeconds?: number;
  /** Delay before every export answer. @defaultValue 0 */
  readonly latencyMs?: number;
  /** Known portfolios; others answer 404. @defaultValue 1 to 9999 */
  readonly portfolioIds?: readonly number[];
  readonly faults?: SimulatorFaults;
  /** Seed of the fault dice. @defaultValue 1 */
  readonly faultSeed?: number;
}

export interface SimulatorCounters {
  tokenRequests: number;
  exportRequests: number;
  /** Export answers by status (0 for resets and truncations). */
  readonly byStatus: Record<number, number>;
}

/** A running simulator; `close()` stops it and drops every connection. */
export interface GatewaySimulator {
  /** Gateway base URL (`REPORT_BASE_URL`). */
  readonly url: string;
  /** Identity provider base URL (`REPORT_AUTH_URL`). */
  readonly authUrl: string;
  readonly realm: string;
  readonly port: number;
  readonly credentials: SimulatorCredentials;
  readonly counters: SimulatorCounters;
  /** When each export request arrived (ms since the epoch), oldest first. */
  readonly exportRequestTimes: readonly number[];
  resetCounters(): void;
  /** Every token issued so far becomes unknown: the next use answers 401. */
  revokeTokens(): void;
  /** Tokens issued so far (for tests that check none leaks into a log). */
  issuedTokens(): string[];
  setTokenLifetime(seconds: number): void;
  setLatency(ms: number): void;
  setFaults(faults: SimulatorFaults): void;
  /** The slice's next answer differs (other values, one row fewer): a restated file. */
  restate(portfolioId: number, reportType: ReportType, date: string): void;
  /** Export requests that reached the slice's own answer so far (a scripted one included): whether its download has begun. */
  requestsFor(portfolioId: number, reportType: ReportType, date: string): number;
  /** Answers the slice's next export requests with these steps, in order, then normally again. */
  script(portfolioId: number, reportType: ReportType, date: string, steps: readonly ScriptStep[]): void;
  close(): Promise<void>;
}

const DEFAULT_CREDENTIALS: SimulatorCredentials = {
  clientId: 'report-sync-demo',
  clientSecret: 'demo-client-secret',
  username: 'demo-user',
  password: 'demo-password',
  tenantId: 'demo-tenant',
};

/** Bodies up to this many rows are built whole and sent with Content-Length; larger ones stream. */
const BUFFERED_ROWS = 50_000;
const EXPORT_PATH = /^\/api\/v1\/report-service\/report\/generate\/portfolio\/([^/]+)\/export$/;

/**
 * The bundled stand-in for the export service and its identity provider, built to the spec: every
 * check the spec implies, deterministic data in both formats, empty bodies on weekends, and switches
 * for the trouble a real service gives.
 */
export async function createGatewaySimulator(options: GatewaySimulatorOptions = {}): Promise<GatewaySimulator> {
  const credentials: SimulatorCredentials = { ...DEFAULT_CREDENTIALS, ...options.credentials };
  const realm = options.realm ?? 'report-sync-demo';
  const authPath = (options.authPath ?? '/auth').replace(/\/+$/, '');
  const apiPath = (options.apiPath ?? '').replace(/\/+$/, '');
  const tokenPath = `${authPath}/realms/${encodeURIComponent(realm)}/protocol/openid-connect/token`;
  const portfolios = options.portfolioIds ? new Set(options.portfolioIds) : undefined;
  const sizes: SyntheticSizes = { indexRecords: options.indexRecords, constituentRows: options.constituentRows };

  let tokenLifetimeSeconds = options.tokenLifetimeSeconds ?? 300;
  let latencyMs = options.latencyMs ?? 0;
  let faults: SimulatorFaults = options.faults ?? {};
  const tokens = new Map<string, number>();
  const everIssued: string[] = [];
  const revisions = new Map<string, number>();
  const scripts = new Map<string, ScriptStep[]>();
  const requestsPerSlice = new Map<string, number>();
  const counters: SimulatorCounters = { tokenRequests: 0, exportRequests: 0, byStatus: {} };
  const exportRequestTimes: number[] = [];
  const dice = seededDice(options.faultSeed ?? 1);
  const sliceKey = (portfolioId: number, reportType: string, date: string) => `${portfolioId}|${reportType}|${date}`;

  const count = (status: number) => {
    counters.byStatus[status] = (counters.byStatus[status] ?? 0) + 1;
  };

  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  const handleToken = (req: IncomingMessage, res: ServerResponse, body: string) => {
    counters.tokenRequests += 1;
    if (
      !String(req.headers['content-type'] ?? '')
        .toLowerCase()
        .startsWith('application/x-www-form-urlencoded')
    ) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: 'Content-Type must be application/x-www-form-urlencoded' });
    }
    const form = new URLSearchParams(body);
    const missing = ['client_id', 'client_secret', 'grant_type', 'username', 'password'].filter((name) => !form.get(name));
    if (missing.length > 0) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: `Missing form parameter: ${missing.join(', ')}` });
    }
    if (form.get('grant_type') !== 'password') {
      return sendJson(res, 400, { error: 'unsupported_grant_type', error_description: 'Unsupported grant_type' });
    }
    if (form.get('client_id') !== credentials.clientId || form.get('client_secret') !== credentials.clientSecret) {
      return sendJson(res, 401, { error: 'invalid_client', error_description: 'Invalid client or Invalid client credentials' });
    }
    if (form.get('username') !== credentials.username || form.get('password') !== credentials.password) {
      return sendJson(res, 401, { error: 'invalid_grant', error_description: 'Invalid user credentials' });
    }
    const accessToken = randomBytes(24).toString('base64url');
    tokens.set(accessToken, Date.now() + tokenLifetimeSeconds * 1000);
    everIssued.push(accessToken);
    return sendJson(res, 200, {
      access_token: accessToken,
      expires_in: Math.max(1, Math.round(tokenLifetimeSeconds)),
      refresh_expires_in: 1800,
      refresh_token: randomBytes(24).toString('base64url'),
      token_type: 'Bearer',
      scope: 'profile email',
    });
  };

  const exportError = (res: ServerResponse, status: number, error: string, message: string) => {
    count(status);
    sendJson(res, status, { status, error, message });
  };

  const handleExport = async (req: IncomingMessage, res: ServerResponse, url: URL, rawPortfolioId: string) => {
    counters.exportRequests += 1;
    exportRequestTimes.push(Date.now());
    const authorization = req.headers.authorization ?? '';
    const bearer = /^Bearer (\S+)$/.exec(authorization)?.[1];
    const expiresAt = bearer === undefined ? undefined : tokens.get(bearer);
    if (expiresAt === undefined || expiresAt <= Date.now()) {
      return exportError(res, 401, 'Unauthorized', bearer === undefined ? 'Missing bearer token' : 'Invalid or expired token');
    }
    if (req.headers['x-client-id'] !== credentials.tenantId) {
      return exportError(res, 403, 'Forbidden', 'Unknown or missing X-CLIENT-ID for this account');
    }
    const reportType = url.searchParams.get('reportType');
    const date = url.searchParams.get('date');
    const format = url.searchParams.get('format') ?? 'json';
    if (!/^[1-9]\d{0,9}$/.test(rawPortfolioId)) return exportError(res, 400, 'Bad Request', 'portfolioId must be a positive integer');
    if (!reportType || !isReportType(reportType)) return exportError(res, 400, 'Bad Request', 'reportType is missing or not supported');
    if (!date || !isIsoDate(date)) return exportError(res, 400, 'Bad Request', 'date must be a date in YYYY-MM-DD form');
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) return exportError(res, 400, 'Bad Request', 'format must be json or csv');
    const portfolioId = Number(rawPortfolioId);
    if (portfolios ? !portfolios.has(portfolioId) : portfolioId > 9999) {
      return exportError(res, 404, 'Not Found', `Portfolio ${portfolioId} not found`);
    }

    const key = sliceKey(portfolioId, reportType, date);
    requestsPerSlice.set(key, (requestsPerSlice.get(key) ?? 0) + 1);
    const step = scripts.get(key)?.shift();
    if (step && 'delayMs' in step) {
      await delay(res, step.delayMs);
      if (res.destroyed) return;
    } else if (step && 'status' in step) {
      count(step.status);
      res.writeHead(step.status, { 'content-length': step.body === undefined ? 0 : Buffer.byteLength(step.body), ...step.headers });
      res.end(step.body);
      return;
    }
    const fault = step && 'fault' in step ? step.fault : rollFault(faults, dice);
    if (fault === 'server-error') return exportError(res, 500, 'Internal Server Error', 'Report generation failed');
    if (fault === 'reset') {
      count(0);
      req.socket.destroy();
      return;
    }
    if (latencyMs > 0) {
      await delay(res, latencyMs);
      if (res.destroyed) return;
    }

    if (weekdayOf(date) === 0 || weekdayOf(date) === 6) {
      count(200);
      res.writeHead(200, { 'content-type': format === 'csv' ? 'application/zip' : 'application/json', 'content-length': 0 });
      res.end();
      return;
    }
    const report = lazySyntheticReport({ portfolioId, reportType, reportDate: date }, { revision: revisions.get(key) ?? 0, sizes });
    const fileName = `${report.fileBaseName}.${format === 'csv' ? 'zip' : 'json'}`;
    const headers = {
      'content-type': format === 'csv' ? 'application/zip' : 'application/json',
      'content-disposition': `attachment; filename="${fileName}"`,
    };
    const body = format === 'csv' ? renderZip(report) : Readable.from(renderJson(report));
    if (report.rowCount > BUFFERED_ROWS && fault !== 'truncate') {
      count(200);
      res.writeHead(200, headers);
      body.pipe(res);
      return;
    }
    const buffer = await collect(body);
    if (fault === 'truncate') {
      count(0);
      res.writeHead(200, { ...headers, 'content-length': buffer.length });
      res.write(buffer.subarray(0, Math.floor(buffer.length / 2)));
      setTimeout(() => res.socket?.destroy(), 5);
      return;
    }
    count(200);
    res.writeHead(200, { ...headers, 'content-length': buffer.length });
    res.end(buffer);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://simulator');
      const body = Buffer.concat(chunks).toString('utf8');
      const exportMatch = url.pathname.startsWith(apiPath) ? EXPORT_PATH.exec(url.pathname.slice(apiPath.length)) : null;
      const handled = (async () => {
        if (url.pathname === tokenPath) {
          if (req.method !== 'POST') return sendJson(res, 405, { error: 'method_not_allowed' });
          return handleToken(req, res, body);
        }
        if (exportMatch) {
          if (req.method !== 'GET') return sendJson(res, 405, { status: 405, error: 'Method Not Allowed' });
          return handleExport(req, res, url, decodeURIComponent(exportMatch[1]!));
        }
        return sendJson(res, 404, { status: 404, error: 'Not Found', message: `No route for ${url.pathname}` });
      })();
      handled.catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { status: 500, error: 'Internal Server Error', message: String(error) });
        else res.destroy();
      });
    });
  });
  server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const origin = `http://${options.host ?? '127.0.0.1'}:${port}`;

  return {
    url: `${origin}${apiPath}`,
    authUrl: `${origin}${authPath}`,
    realm,
    port,
    credentials,
    counters,
    exportRequestTimes,
    resetCounters() {
      counters.tokenRequests = 0;
      counters.exportRequests = 0;
      for (const status of Object.keys(counters.byStatus)) delete counters.byStatus[Number(status)];
      exportRequestTimes.length = 0;
    },
    revokeTokens: () => tokens.clear(),
    issuedTokens: () => [...everIssued],
    setTokenLifetime(seconds) {
      tokenLifetimeSeconds = seconds;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    setFaults(next) {
      faults = next;
    },
    restate(portfolioId, reportType, date) {
      const key = sliceKey(portfolioId, reportType, date);
      revisions.set(key, (revisions.get(key) ?? 0) + 1);
    },
    requestsFor: (portfolioId, reportType, date) => requestsPerSlice.get(sliceKey(portfolioId, reportType, date)) ?? 0,
    script(portfolioId, reportType, date, steps) {
      scripts.set(sliceKey(portfolioId, reportType, date), [...steps]);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Fault = 'server-error' | 'reset' | 'truncate' | undefined;

/** The `REPORT_*` variables that point report-sync at a simulator. */
export function simulatorEnvironment(simulator: GatewaySimulator): Record<string, string> {
  const { credentials } = simulator;
  return {
    REPORT_BASE_URL: simulator.url,
    REPORT_AUTH_URL: simulator.authUrl,
    REPORT_REALM: simulator.realm,
    REPORT_CLIENT_ID: credentials.clientId,
    REPORT_CLIENT_SECRET: credentials.clientSecret,
    REPORT_USERNAME: credentials.username,
    REPORT_PASSWORD: credentials.password,
    REPORT_TENANT_ID: credentials.tenantId,
  };
}

function rollFault(faults: SimulatorFaults, roll: () => number): Fault {
  if (faults.serverErrorRate && roll() < faults.serverErrorRate) return 'server-error';
  if (faults.resetRate && roll() < faults.resetRate) return 'reset';
  if (faults.truncateRate && roll() < faults.truncateRate) return 'truncate';
  return undefined;
}

function seededDice(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 4_294_967_296;
  };
}

/**
 * Waits `ms`, or less when the connection closes meanwhile (the client gave up, or `close()`
 * dropped it): a scripted minute-long delay must not keep a closed simulator's process alive.
 */
function delay(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}
