import type { IncomingHttpHeaders } from 'node:http';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenRefresher } from '../../../src/auth/token-refresher.js';
import type { TokenSource } from '../../../src/auth/token-source.js';
import { ExportError } from '../../../src/errors/sync-error.js';
import { ExportClient } from '../../../src/gateway/export-client.js';
import type { RequestGate } from '../../../src/gateway/request-gate.js';
import type { Slice } from '../../../src/slice/slice.js';
import { startHttpServer } from '../../helpers/http-server.js';
import { until } from '../../helpers/until.js';

const slice: Slice = { portfolioId: 42, reportType: 'constituent.close', reportDate: '2024-03-01' };

function fixedTokens(): TokenSource & { renewals: number } {
  const source = {
    renewals: 0,
    current: 'tok-1',
    async getToken() {
      return source.current;
    },
    async renewAfterRejection(rejected: string) {
      if (rejected === source.current) {
        source.renewals += 1;
        source.current = `tok-${source.renewals + 1}`;
      }
      return source.current;
    },
  };
  return source;
}

describe('ExportClient', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function clientFor(handler: Parameters<typeof startHttpServer>[0], basePath = '', maxDownloadBytes = 1 << 20) {
    const server = await startHttpServer(handler);
    const agent = new Agent();
    cleanups.push(
      () => agent.close(),
      () => server.close(),
    );
    const tokens = fixedTokens();
    const client = new ExportClient({
      baseUrl: new URL(server.url + basePath),
      tenantId: 'tenant-9',
      tokens,
      dispatcher: agent,
      maxDownloadBytes,
      spoolMemoryBytes: 16,
    });
    return { client, tokens };
  }

  it('sends the path, query and both headers exactly as the spec gives them', async () => {
    let seen: { url?: string; headers?: IncomingHttpHeaders; method?: string } = {};
    const { client } = await clientFor((req, res) => {
      seen = { url: req.url, headers: req.headers, method: req.method };
      res.writeHead(200, { 'content-type': 'application/zip', 'content-disposition': 'attachment; filename="2024-03-01_My_Index_index.zip"' });
      res.end('PK-not-really-a-zip-but-long-enough');
    }, '/gw/prefix');
    const download = await client.download(slice, 'csv');
    expect(seen.method).toBe('GET');
    // Not prose: the whole URL, base path kept, is what is checked.
    expect(seen.url).toBe('/gw/prefix/api/v1/report-service/report/generate/portfolio/42/export?reportType=constituent.close&date=2024-03-01&format=csv');
    expect(seen.headers?.authorization).toBe('Bearer tok-1');
    expect(seen.headers?.['x-client-id']).toBe('tenant-9');
    expect(download.kind).toBe('file');
    if (download.kind === 'file') {
      expect(download.fileName).toBe('2024-03-01_My_Index_index.zip');
      expect(download.body.bytes).toBe(35);
      expect(download.body.sha256).toMatch(/^[0-9a-f]{64}$/);
      await download.body.dispose();
    }
  });

  it("reads the file's name from every form of Content-Disposition, and none from a header without one", async () => {
    const headers = [
      // The form the service sends, with spaces, signs and a Latin-1 letter in the name.
      'attachment; filename="2024-03-01_My_Index_index.zip"',
      'attachment; filename="Global Equity #1 (EUR) index.json"',
      'attachment; filename="caf\u00e9_index.json"',
      // Other forms a service or a proxy may send.
      'Attachment; filename="upper.zip"',
      'attachment; filename=bare.zip',
      'attachment; filename="with \\"quotes\\".zip"',
      "attachment; filename*=UTF-8''%E2%82%AC%20rates.json",
      'inline; filename="inline.json"',
      'attachment; filename=""',
      'attachment',
    ];
    let header = '';
    const { client } = await clientFor((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-disposition': header }).end('[]');
    });
    const names: (string | null)[] = [];
    for (header of headers) {
      const download = await client.download(slice, 'json');
      if (download.kind !== 'file') throw new Error(`no file for ${header}`);
      names.push(download.fileName);
      await download.body.dispose();
    }
    expect(names).toEqual([
      '2024-03-01_My_Index_index.zip',
      'Global Equity #1 (EUR) index.json',
      'caf\u00e9_index.json',
      'upper.zip',
      'bare.zip',
      'with "quotes".zip',
      '\u20ac rates.json',
      'inline.json',
      null,
      null,
    ]);
  });

  it('treats a 200 with an empty body as no data', async () => {
    const { client } = await clientFor((_req, res) => {
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    });
    expect(await client.download(slice, 'json')).toEqual({ kind: 'no_data' });
  });

  it('renews the token once on a 401 and retries that request once', async () => {
    const auth: string[] = [];
    const { client, tokens } = await clientFor((req, res) => {
      auth.push(String(req.headers.authorization));
      if (req.headers.authorization === 'Bearer tok-1') {
        res.writeHead(401).end();
        return;
      }
      res.writeHead(200).end('[]');
    });
    const download = await client.download(slice, 'json');
    expect(download.kind).toBe('file');
    if (download.kind === 'file') await download.body.dispose();
    expect(auth).toEqual(['Bearer tok-1', 'Bearer tok-2']);
    expect(tokens.renewals).toBe(1);
  });

  it('fails with a clear message when the token a 401 asked for is refused too, and asks for no more tokens on the next slices', async () => {
    const server = await startHttpServer((_req, res) => {
      res.writeHead(401).end('{"error":"nope"}');
    });
    const agent = new Agent();
    cleanups.push(
      () => agent.close(),
      () => server.close(),
    );
    let issued = 0;
    const tokens = new TokenRefresher({
      issue: async () => {
        issued += 1;
        return { accessToken: `tok-${issued}`, expiresInSeconds: 300 };
      },
    });
    const client = new ExportClient({ baseUrl: new URL(server.url), tenantId: 'tenant-9', tokens, dispatcher: agent, maxDownloadBytes: 1 << 20, spoolMemoryBytes: 16 });
    const error = await client.download(slice, 'json').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExportError);
    expect((error as ExportError).code).toBe('EXPORT_UNAUTHORIZED');
    expect((error as ExportError).retryable).toBe(false);
    expect((error as ExportError).message).toContain('check REPORT_TENANT_ID (sent as X-CLIENT-ID)');
    expect(issued).toBe(2);
    // Ten more slices: the fresh token is refused again and handed back, not renewed per slice.
    for (let i = 0; i < 10; i += 1) expect(((await client.download(slice, 'json').catch((e: unknown) => e)) as ExportError).code).toBe('EXPORT_UNAUTHORIZED');
    expect(issued).toBe(2);
  });

  it('retries with a second renewal when the token it was given had been renewed for an expiry, then stops', async () => {
    const auth: string[] = [];
    const { client, tokens } = await clientFor((req, res) => {
      auth.push(String(req.headers.authorization));
      res.writeHead(401).end();
    });
    const error = await client.download(slice, 'json').catch((e: unknown) => e);
    expect((error as ExportError).code).toBe('EXPORT_UNAUTHORIZED');
    // A source that renews every refused token: two renewals, three requests, never more.
    expect(auth).toEqual(['Bearer tok-1', 'Bearer tok-2', 'Bearer tok-3']);
    expect(tokens.renewals).toBe(2);
  });

  it.each([
    { admittedAgain: 0, events: ['admitted', 'token', 'sending', 'answered'] },
    // A long wait for the token: the gate admits the request again, and the token is taken again after that wait.
    { admittedAgain: 1, events: ['admitted', 'token', 'sending', 'token', 'sending', 'answered'] },
  ])(
    'takes the token once the gate has admitted the request, again after each new admission ($admittedAgain), and tells the gate when it sends and when it was answered',
    async ({ admittedAgain, events: expected }) => {
      const server = await startHttpServer((_req, res) => {
        res.writeHead(200, { 'content-length': '0' }).end();
      });
      const agent = new Agent();
      cleanups.push(
        () => agent.close(),
        () => server.close(),
      );
      const events: string[] = [];
      const tokens: TokenSource = {
        getToken: async () => {
          events.push('token');
          return 'tok-1';
        },
        renewAfterRejection: async (rejected) => rejected,
      };
      let readmissions = admittedAgain;
      const gate: RequestGate = {
        acquire: async () => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          events.push('admitted');
          return {
            sending: async () => {
              events.push('sending');
              readmissions -= 1;
              return readmissions >= 0;
            },
            answered: async () => void events.push('answered'),
          };
        },
      };
      const client = new ExportClient({ baseUrl: new URL(server.url), tenantId: 'tenant-9', tokens, gate, dispatcher: agent, maxDownloadBytes: 1 << 20, spoolMemoryBytes: 16 });
      expect(await client.download(slice, 'json')).toEqual({ kind: 'no_data' });
      expect(events).toEqual(expected);
    },
  );

  it.each([
    [400, 'EXPORT_BAD_REQUEST', false, /check the parameters/],
    [403, 'EXPORT_FORBIDDEN', false, /verify REPORT_TENANT_ID/],
    [404, 'EXPORT_NOT_FOUND', false, /check the portfolio id/],
    [500, 'EXPORT_SERVER_ERROR', true, /retried/],
    [503, 'EXPORT_SERVER_ERROR', true, /retried/],
    [429, 'EXPORT_RATE_LIMITED', true, /retried/],
    [418, 'EXPORT_REJECTED', false, /418/],
  ])('classifies %i as %s', async (status, code, retryable, message) => {
    const { client } = await clientFor((_req, res) => {
      res.writeHead(status, { 'retry-after': '3', 'content-type': 'application/json' }).end('{"message":"tok-1 is echoed here"}');
    });
    const error = (await client.download(slice, 'json').catch((e: unknown) => e)) as ExportError;
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('tok-1');
    if (status === 429) expect(error.retryAfterMs).toBe(3000);
  });

  it('classifies a reset and a body cut short as retryable network trouble', async () => {
    const { client } = await clientFor((req, res) => {
      if (req.url?.includes('constituent')) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-length': '1000' });
      res.write('['.padEnd(100, ' '));
      setTimeout(() => res.socket?.destroy(), 10);
    });
    const reset = (await client.download(slice, 'csv').catch((e: unknown) => e)) as ExportError;
    expect(reset.code).toBe('EXPORT_NETWORK');
    const cut = (await client.download({ ...slice, reportType: 'index' }, 'json').catch((e: unknown) => e)) as ExportError;
    expect(cut.code).toBe('EXPORT_NETWORK');
    expect(cut.retryable).toBe(true);
  });

  it('refuses a body announced or grown past maxDownloadBytes', async () => {
    const { client } = await clientFor(
      (req, res) => {
        if (req.url?.includes('index')) {
          res.writeHead(200, { 'content-length': String(5 * 1024 ** 3) });
          res.write('x');
          return;
        }
        res.writeHead(200);
        res.end(Buffer.alloc(4096, 'y'));
      },
      '',
      1024,
    );
    const announced = (await client.download({ ...slice, reportType: 'index' }, 'json').catch((e: unknown) => e)) as ExportError;
    expect(announced.code).toBe('EXPORT_TOO_LARGE');
    const grown = (await client.download(slice, 'csv').catch((e: unknown) => e)) as ExportError;
    expect(grown.code).toBe('EXPORT_TOO_LARGE');
    expect(grown.message).toContain('limits.maxDownloadBytes');
  });

  describe('downloadsAtOnce', () => {
    /**
     * A client of `downloadsAtOnce` slots and a service that holds each answer's body until told:
     * `held` has one such answer per request seen.
     */
    async function holdingService(downloadsAtOnce: number, signal?: AbortSignal) {
      const held: (() => void)[] = [];
      const server = await startHttpServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
        res.write('[');
        held.push(() => res.end(']'));
      });
      const agent = new Agent();
      cleanups.push(
        () => agent.close(),
        () => server.close(),
      );
      const options = { tenantId: 't', tokens: fixedTokens(), dispatcher: agent, maxDownloadBytes: 1024, spoolMemoryBytes: 1024 };
      return { client: new ExportClient({ ...options, baseUrl: new URL(server.url), downloads: { atOnce: downloadsAtOnce, maxRetryAfterMs: 60_000 }, signal }), held };
    }

    const days = ['2024-03-04', '2024-03-05', '2024-03-06'].map((reportDate) => ({ ...slice, reportDate }));

    it('downloads no more at once; the next request goes once a body is all in', async () => {
      const { client, held } = await holdingService(2);
      const downloads = days.map((day) => client.download(day, 'json'));
      await until(() => held.length === 2, 5_000, 'two requests');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(held).toHaveLength(2);
      held[0]!();
      const first = await downloads[0]!;
      await until(() => held.length === 3, 5_000, 'the third request');
      held[1]!();
      held[2]!();
      for (const download of [first, await downloads[1]!, await downloads[2]!]) {
        expect(download.kind).toBe('file');
        if (download.kind === 'file') await download.body.dispose();
      }
    });

    it('sends every request at once when the slots suffice', async () => {
      const { client, held } = await holdingService(3);
      const downloads = days.map((day) => client.download(day, 'json'));
      await until(() => held.length === 3, 5_000, 'three requests at once');
      for (const answer of held) answer();
      for (const download of await Promise.all(downloads)) if (download.kind === 'file') await download.body.dispose();
    });

    /** Two downloads through one slot; the service answers the first `first`: when the second request came, ms after the first. */
    async function secondRequestAfter(first: { status: number; headers?: Record<string, string> }, maxRetryAfterMs: number): Promise<number> {
      const seen: number[] = [];
      const server = await startHttpServer((_req, res) => {
        seen.push(performance.now());
        if (seen.length === 1) res.writeHead(first.status, first.headers).end('{"error":"busy"}');
        else res.writeHead(200, { 'content-length': '0' }).end();
      });
      const agent = new Agent();
      cleanups.push(
        () => agent.close(),
        () => server.close(),
      );
      const client = new ExportClient({
        baseUrl: new URL(server.url),
        tenantId: 't',
        tokens: fixedTokens(),
        dispatcher: agent,
        maxDownloadBytes: 1024,
        spoolMemoryBytes: 1024,
        downloads: { atOnce: 1, maxRetryAfterMs },
      });
      const [refused, next] = await Promise.allSettled([client.download(days[0]!, 'json'), client.download(days[1]!, 'json')]);
      expect(refused).toMatchObject({ status: 'rejected', reason: { status: first.status } });
      expect(next).toEqual({ status: 'fulfilled', value: { kind: 'no_data' } });
      return seen[1]! - seen[0]!;
    }

    it("keeps a 429's slot for its Retry-After, so the download waiting for it waits that out", async () => {
      expect(await secondRequestAfter({ status: 429, headers: { 'retry-after': '1' } }, 60_000)).toBeGreaterThanOrEqual(990);
    });

    it('keeps it at most retry.maxRetryAfterMs, and gives a slot back at once after any other failure', async () => {
      const capped = await secondRequestAfter({ status: 429, headers: { 'retry-after': '3600' } }, 300);
      expect(capped).toBeGreaterThanOrEqual(290);
      expect(capped).toBeLessThan(5_000);
      expect(await secondRequestAfter({ status: 503 }, 60_000)).toBeLessThan(500);
    });

    it('a shutdown ends a download waiting for a slot with INTERRUPTED, and it never asks the service', async () => {
      const shutdown = new AbortController();
      const { client, held } = await holdingService(1, shutdown.signal);
      const answering = client.download(days[0]!, 'json').catch((e: unknown) => e);
      const waiting = client.download(days[1]!, 'json').catch((e: unknown) => e);
      await until(() => held.length === 1, 5_000, 'the first request');
      shutdown.abort();
      for (const error of [await answering, await waiting]) expect(error).toMatchObject({ code: 'INTERRUPTED' });
      expect((await waiting) as Error).toHaveProperty('message', expect.stringContaining('2024-03-05'));
      expect(held).toHaveLength(1);
    });
  });
});

describe('ExportClient.urlFor', () => {
  it.each([
    ['http://gw:8080', 'http://gw:8080/api/v1/report-service/report/generate/portfolio/42/export?reportType=constituent.close&date=2024-03-01&format=csv'],
    ['https://gw/prefix/', 'https://gw/prefix/api/v1/report-service/report/generate/portfolio/42/export?reportType=constituent.close&date=2024-03-01&format=csv'],
    ['https://gw/a b', 'https://gw/a%20b/api/v1/report-service/report/generate/portfolio/42/export?reportType=constituent.close&date=2024-03-01&format=csv'],
    ['https://gw/p?key=1', 'https://gw/p/api/v1/report-service/report/generate/portfolio/42/export?key=1&reportType=constituent.close&date=2024-03-01&format=csv'],
    ['https://gw/p#x', 'https://gw/p/api/v1/report-service/report/generate/portfolio/42/export?reportType=constituent.close&date=2024-03-01&format=csv#x'],
  ])('keeps the path, query and fragment of %s', async (base, expected) => {
    const dispatcher = new Agent();
    try {
      const client = new ExportClient({ baseUrl: new URL(base), tenantId: 't', tokens: fixedTokens(), dispatcher, maxDownloadBytes: 1, spoolMemoryBytes: 1 });
      expect(client.urlFor(slice, 'csv').href).toBe(expected);
    } finally {
      await dispatcher.close();
    }
  });
});
