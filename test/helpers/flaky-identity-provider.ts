import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { request } from 'undici';

/** How the token endpoint behaves for now. */
export type IdentityProviderMode = 'up' | '503' | 'refuse' | 'reject';

/**
 * A token endpoint in front of the simulator's, for outage tests: `up` passes requests through,
 * `503` answers 503 Service Unavailable, `refuse` stops listening so connections are refused
 * (ECONNREFUSED), as when the provider's process is down; `reject` refuses the credentials (401
 * invalid_grant), as when a password was changed. Point `REPORT_TOKEN_URL` at `tokenUrl`.
 */
export async function startFlakyIdentityProvider(upstreamTokenUrl: string) {
  let mode: IdentityProviderMode = 'up';
  const requests: { at: number; mode: IdentityProviderMode }[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ at: Date.now(), mode });
      if (mode === 'reject') {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'Invalid user credentials' }));
        return;
      }
      if (mode !== 'up') {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end('Service Unavailable');
        return;
      }
      request(upstreamTokenUrl, {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type'] ?? '') },
        body: Buffer.concat(chunks),
      })
        .then(async (answer) => {
          const body = Buffer.from(await answer.body.arrayBuffer());
          res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type'] ?? 'application/json') });
          res.end(body);
        })
        .catch(() => res.destroy());
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  const dropConnections = () => {
    for (const socket of sockets) socket.destroy();
  };

  return {
    tokenUrl: `http://127.0.0.1:${port}/token`,
    /** Every request that reached the endpoint, with the mode it met. */
    requests,
    get mode(): IdentityProviderMode {
      return mode;
    },
    async setMode(next: IdentityProviderMode): Promise<void> {
      if (next === mode) return;
      if (next === 'refuse') {
        mode = next;
        dropConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        return;
      }
      if (mode === 'refuse') {
        server.listen(port, '127.0.0.1');
        await once(server, 'listening');
      }
      mode = next;
    },
    async close(): Promise<void> {
      dropConnections();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FlakyIdentityProvider = Awaited<ReturnType<typeof startFlakyIdentityProvider>>;
