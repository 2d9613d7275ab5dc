import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The path a Slack webhook URL carries its token in: it must never reach a log line. */
export const SECRET_PATH = '/services/T000/B000/sEcReTtOkEn123';

/** How the receiver answers one request. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'destroy' | 'hang';

export interface Received {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
  readonly at: number;
}

/** A webhook receiver on loopback that records each request and answers per `script` (the last answer repeats). */
export class Receiver {
  readonly requests: Received[] = [];
  readonly #server: Server;
  readonly #script: Answer[];

  private constructor(script: Answer[]) {
    this.#script = script;
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => this.#answer(req, res, Buffer.concat(chunks).toString('utf8')));
    });
  }

  static async start(script: Answer[] = [{ status: 200, body: 'ok' }]): Promise<Receiver> {
    const receiver = new Receiver(script);
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): URL {
    const { port } = this.#server.address() as AddressInfo;
    return new URL(`http://127.0.0.1:${port}${SECRET_PATH}`);
  }

  #answer(req: IncomingMessage, res: ServerResponse, text: string): void {
    this.requests.push({ method: req.method, url: req.url, headers: req.headers, body: JSON.parse(text) as Record<string, unknown>, at: Date.now() });
    const answer = this.#script[Math.min(this.requests.length - 1, this.#script.length - 1)]!;
    if (answer === 'hang') return;
    if (answer === 'destroy') {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body ?? '');
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
