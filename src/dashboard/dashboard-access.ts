import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ConfigError } from '../errors/sync-error.js';

/** The realm a browser's login prompt names. */
const REALM = 'report-sync';

export interface DashboardAccessOptions {
  /** `dashboard.token`: when set, every request must present it; null or undefined: no login. */
  readonly token: string | null | undefined;
  /** The address the dashboard listens on: anything but loopback requires the token. */
  readonly host: string;
}

/**
 * Who may read the dashboard, before every route. Cross-site requests get 403 unless navigating to
 * the page (any web page can make it do a GET's work). With a token, Bearer or Basic (token as
 * password) is required, else 401; digests are compared in constant time so timing leaks nothing.
 * @throws ConfigError, before anything listens, when the host is not loopback and no token is set
 */
export function dashboardAccess(options: DashboardAccessOptions): RequestHandler {
  const token = options.token ?? undefined;
  if (token === undefined && !isLoopback(options.host)) {
    throw new ConfigError(
      `the dashboard would listen on ${options.host}, beyond this machine, without a login: set dashboard.token (REPORT_SYNC_DASHBOARD__TOKEN) to a secret of at least 16 characters, or listen on 127.0.0.1 (--host)`,
    );
  }
  const expected = token === undefined ? undefined : digest(token);
  return (req: Request, res: Response, next: NextFunction) => {
    if (isCrossSite(req)) {
      res.status(403).type('text/plain').send('cross-site requests are refused: open the dashboard itself\n');
      return;
    }
    if (expected === undefined) {
      next();
      return;
    }
    const presented = presentedToken(req.headers.authorization);
    if (presented !== undefined && timingSafeEqual(digest(presented), expected)) {
      next();
      return;
    }
    res
      .status(401)
      .set('WWW-Authenticate', `Basic realm="${REALM}"`)
      .type('text/plain')
      .send('this dashboard asks for its token (dashboard.token): send Authorization: Bearer <token>, or log in with any user name and the token as password\n');
  };
}

/** Whether `host` (an address to listen on) is this machine only. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** A request another site's page made: anything but a top-level navigation to a page (never to the API). */
function isCrossSite(req: Request): boolean {
  if (req.headers['sec-fetch-site'] !== 'cross-site') return false;
  return req.headers['sec-fetch-mode'] !== 'navigate' || req.path.includes('/api/');
}

/** The token an `Authorization` header presents: a Bearer value, or a Basic password (any user name). */
function presentedToken(header: string | undefined): string | undefined {
  const match = /^\s*(Bearer|Basic)\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  if (match[1]!.toLowerCase() === 'bearer') return match[2];
  const credentials = Buffer.from(match[2]!, 'base64').toString('utf8');
  const colon = credentials.indexOf(':');
  return colon < 0 ? undefined : credentials.slice(colon + 1);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
