import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { request } from 'undici';
import type { GatewaySimulator } from '../../src/simulator/gateway-simulator.js';

/** How the token endpoint answers: passed through to the simulator, or one of the hostile answers. */
export type EchoingTokenMode =
  | 'forward'
  /** 400 invalid_grant whose description quotes the password, client secret and username back. */
  | 'oauth-error-echo'
  /** 200 with an HTML login page (not JSON) that quotes the submitted form, password included. */
  | 'html-200';

/**
 * An upstream that misbehaves the way careless gateways do: it sits in front of the simulator and
 * passes everything through, except that export requests of chosen portfolios get an error page
 * echoing the request (its Authorization header, the bare token in several encodings) and the
 * token endpoint can echo the submitted credentials. Point REPORT_BASE_URL at `url` and
 * REPORT_TOKEN_URL at `tokenUrl`.
 */
export async function startEchoingGateway(simulator: GatewaySimulator) {
  const simulatorTokenUrl = `${simulator.authUrl}/realms/${simulator.realm}/protocol/openid-connect/token`;
  let tokenMode: EchoingTokenMode = 'forward';
  /** Portfolio id → status of the echoing error page its export requests get. */
  const echoStatus = new Map<number, number>();
  let echoedPages = 0;
  const sockets = new Set<Socket>();

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://gateway');
      if (url.pathname === '/token') {
        const form = new URLSearchParams(body.toString('utf8'));
        if (tokenMode === 'oauth-error-echo') {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              error: 'invalid_grant',
              error_description: `Invalid user credentials for ${form.get('username')} with password ${form.get('password')} (client ${form.get('client_id')} secret ${form.get('client_secret')}); raw form: ${body.toString('utf8')}`,
            }),
          );
          return;
        }
        if (tokenMode === 'html-200') {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end(
            `<html><body><form>user ${form.get('username')} password ${form.get('password')} secret ${form.get('client_secret')}</form><!-- ${body.toString('utf8')} --></body></html>`,
          );
          return;
        }
        forward(simulatorTokenUrl, 'POST', req.headers, body, res);
        return;
      }
      const portfolioId = Number(/\/portfolio\/([^/]+)\/export$/.exec(url.pathname)?.[1]);
      const status = echoStatus.get(portfolioId);
      if (status !== undefined) {
        echoedPages += 1;
        const authorization = String(req.headers.authorization ?? '');
        const token = authorization.replace(/^Bearer\s+/i, '');
        res.writeHead(status, { 'content-type': 'text/html' });
        res.end(
          `<html><h1>Error ${status}</h1><pre>GET ${req.url}\nAuthorization: ${authorization}\nX-Client-Id: ${String(req.headers['x-client-id'])}</pre>` +
            `<script>var debug = ${JSON.stringify({ headers: req.headers, access_token: token })};</script>` +
            `<a href="/retry?access_token=${encodeURIComponent(token)}">retry</a> token=${token}</html>`,
        );
        return;
      }
      forward(`${simulator.url}${url.pathname}${url.search}`, 'GET', req.headers, undefined, res);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    url: origin,
    tokenUrl: `${origin}/token`,
    /** The variables that point report-sync at this gateway (over the simulator's). */
    env: { REPORT_BASE_URL: origin, REPORT_TOKEN_URL: `${origin}/token` },
    setTokenMode(mode: EchoingTokenMode) {
      tokenMode = mode;
    },
    /** Export requests of `portfolioId` get an echoing error page with this status. */
    echoExportError(portfolioId: number, status: number) {
      echoStatus.set(portfolioId, status);
    },
    /** How many echoing error pages were served (so a test knows its hostile case happened). */
    echoedPages: () => echoedPages,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export type EchoingGateway = Awaited<ReturnType<typeof startEchoingGateway>>;

function forward(target: string, method: 'GET' | 'POST', headers: IncomingHttpHeaders, body: Buffer | undefined, res: ServerResponse): void {
  const pass: Record<string, string> = {};
  for (const name of ['authorization', 'x-client-id', 'content-type', 'accept']) {
    const value = headers[name];
    if (typeof value === 'string') pass[name] = value;
  }
  request(target, { method, headers: pass, body })
    .then(async (answer) => {
      const data = Buffer.from(await answer.body.arrayBuffer());
      const out: Record<string, string> = { 'content-length': String(data.length) };
      for (const name of ['content-type', 'content-disposition', 'retry-after']) {
        const value = answer.headers[name];
        if (typeof value === 'string') out[name] = value;
      }
      res.writeHead(answer.statusCode, out);
      res.end(data);
    })
    .catch(() => res.destroy());
}
