import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

/** How the token endpoint misbehaves for now. */
export type HostileBehaviour =
  /** Passes the grant to the real token endpoint; `expiresIn` (any JSON value) replaces its expires_in. */
  | { readonly kind: 'forward'; readonly expiresIn?: unknown }
  /** Issues tokens of its own, which the gateway never saw: every export answers 401 to them. */
  | { readonly kind: 'foreign'; readonly expiresIn?: number }
  /** Answers 200 at once, then its body one byte per `everyMs`, never finishing. */
  | { readonly kind: 'trickle'; readonly everyMs?: number }
  /** Answers a redirect (301, 302, 307, 308…) to `location`, sent as latin1 bytes, unchecked. */
  | { readonly kind: 'redirect'; readonly status: number; readonly location: string };

/**
 * A token endpoint in front of the simulator's that misbehaves on purpose, found by trial: it
 * trickles, redirects, gives out tokens the gateway refuses, or odd `expires_in` values. Point
 * `REPORT_TOKEN_URL` at `tokenUrl`. `grants` counts the tokens it handed out.
 */
export async function startHostileIdentityProvider(upstreamTokenUrl: string, initial: HostileBehaviour = { kind: 'forward' }) {
  let behaviour = initial;
  const requests: { at: number; kind: HostileBehaviour['kind'] }[] = [];
  let grants = 0;
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const now = behaviour;
      requests.push({ at: Date.now(), kind: now.kind });
      switch (now.kind) {
        case 'trickle': {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          const body = '{"access_token":"never-finished","expires_in":300}';
          let sent = 0;
          const timer = setInterval(() => {
            res.write(body[sent % body.length]!);
            sent += 1;
          }, now.everyMs ?? 1_000);
          timers.add(timer);
          res.on('close', () => {
            clearInterval(timer);
            timers.delete(timer);
          });
          return;
        }
        case 'redirect':
          // Written by hand: Node's own header check would refuse the odd bytes a hostile Location may carry.
          res.socket!.end(
            `HTTP/1.1 ${now.status} ${STATUS_CODES[now.status] ?? 'Redirect'}\r\nlocation: ${now.location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`,
            'latin1',
          );
          return;
        case 'foreign':
          grants += 1;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ access_token: `foreign-${randomBytes(8).toString('hex')}`, expires_in: now.expiresIn ?? 300, token_type: 'Bearer' }));
          return;
        case 'forward':
          request(upstreamTokenUrl, { method: 'POST', headers: { 'content-type': String(req.headers['content-type'] ?? '') }, body: Buffer.concat(chunks) })
            .then(async (answer) => {
              let text = await answer.body.text();
              if (answer.statusCode === 200) {
                grants += 1;
                if ('expiresIn' in now) text = JSON.stringify({ ...(JSON.parse(text) as object), expires_in: now.expiresIn });
              }
              res.writeHead(answer.statusCode, { 'content-type': 'application/json' });
              res.end(text);
            })
            .catch(() => res.destroy());
          return;
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    tokenUrl: `http://127.0.0.1:${port}/token`,
    /** Every request that reached the endpoint, with the behaviour it met. */
    requests,
    /** Tokens handed out (forwarded or its own). */
    get grants(): number {
      return grants;
    },
    set(next: HostileBehaviour): void {
      behaviour = next;
    },
    async close(): Promise<void> {
      for (const timer of timers) clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type HostileIdentityProvider = Awaited<ReturnType<typeof startHostileIdentityProvider>>;
