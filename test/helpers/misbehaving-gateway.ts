import { createServer, type Server, type Socket } from 'node:net';

/** One request as the misbehaving gateway read it off the socket. */
export interface RawRequest {
  readonly method: string;
  readonly url: URL;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** 1-based: how many requests the current handler has been given, this one included. */
  readonly number: number;
}

/**
 * The answer side of one exchange, at the byte level: nothing is added, fixed or checked, so a
 * handler can lie about Content-Length, stop mid-chunk, trickle, or never answer at all.
 */
export interface RawReply {
  readonly socket: Socket;
  /** Whether the connection is gone (handlers that loop must stop). */
  readonly closed: boolean;
  /** Writes bytes exactly as given. */
  write(data: string | Buffer): void;
  /** Writes a status line and exactly these headers. */
  head(status: number, headers?: Readonly<Record<string, string | number>>): void;
  /** A well-formed answer with its Content-Length; the connection stays open for the next request. */
  send(status: number, body?: string | Buffer, headers?: Readonly<Record<string, string | number>>): void;
  /** Ends the connection cleanly (FIN), for close-delimited bodies. */
  end(): void;
  /** Drops the connection at once (RST). */
  reset(): void;
  /** Runs `fn` every `ms` until it returns false or the connection is gone. */
  every(ms: number, fn: () => unknown): void;
  /** Runs `fn` once after `ms`, unless the connection is gone by then. */
  after(ms: number, fn: () => void): void;
}

export type RawHandler = (request: RawRequest, reply: RawReply) => void | Promise<void>;

/** A running misbehaving gateway; `close()` drops every connection and stops every timer. */
export interface MisbehavingGateway {
  /** Base URL to use as `REPORT_BASE_URL` (or, with a path, as `REPORT_TOKEN_URL`). */
  readonly url: string;
  /** Every request received, oldest first, with when it arrived. */
  readonly requests: readonly (RawRequest & { readonly at: number })[];
  /** Answers every following request with `handler`, numbering them from 1 again. */
  handle(handler: RawHandler): void;
  close(): Promise<void>;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  302: 'Found',
  401: 'Unauthorized',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/**
 * A gateway that misbehaves in ways the bundled simulator cannot (and should not learn to):
 * a raw TCP server on a loopback port that reads HTTP/1.1 requests and lets each test write its
 * answer byte by byte. It checks no token: pair it with the simulator's identity provider.
 */
export async function startMisbehavingGateway(): Promise<MisbehavingGateway> {
  let handler: RawHandler = (_request, reply) => reply.send(404, 'no handler');
  let handled = 0;
  const requests: (RawRequest & { at: number })[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {}); // the client hanging up mid-answer is expected here
    let pending = Buffer.alloc(0);
    let busy = false;

    const next = (): void => {
      if (busy || socket.destroyed) return;
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = pending.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? 0);
      if (pending.length < end + 4 + length) return; // the request body is still coming
      pending = pending.subarray(end + 4 + length);
      const [method = 'GET', target = '/'] = lines[0]!.split(' ');
      handled += 1;
      const request: RawRequest = { method, url: new URL(target, 'http://gateway'), headers, number: handled };
      requests.push({ ...request, at: Date.now() });
      busy = true;
      const reply = rawReply(socket, timers, () => {
        busy = false;
        setImmediate(next);
      });
      Promise.resolve(handler(request, reply)).catch(() => reply.reset());
    };

    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      next();
    });
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    handle(next) {
      handler = next;
      handled = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function rawReply(socket: Socket, timers: Set<NodeJS.Timeout>, done: () => void): RawReply {
  const track = (timer: NodeJS.Timeout) => {
    timers.add(timer);
    return timer;
  };
  const reply: RawReply = {
    socket,
    get closed() {
      return socket.destroyed || socket.writableEnded;
    },
    write(data) {
      if (!reply.closed) socket.write(data);
    },
    head(status, headers = {}) {
      const lines = [`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Status'}`];
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
      reply.write(`${lines.join('\r\n')}\r\n\r\n`);
    },
    send(status, body = '', headers = {}) {
      const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
      reply.head(status, { 'Content-Length': bytes.length, ...headers });
      reply.write(bytes);
      done();
    },
    end() {
      if (!reply.closed) socket.end();
    },
    reset() {
      if (!socket.destroyed) socket.resetAndDestroy();
    },
    every(ms, fn) {
      const timer = track(
        setInterval(() => {
          if (reply.closed || fn() === false) {
            clearInterval(timer);
            timers.delete(timer);
          }
        }, ms),
      );
    },
    after(ms, fn) {
      const timer = track(
        setTimeout(() => {
          timers.delete(timer);
          if (!reply.closed) fn();
        }, ms),
      );
    },
  };
  return reply;
}
