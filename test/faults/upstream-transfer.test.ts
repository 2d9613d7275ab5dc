import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSliceFailed, expectSliceLoaded } from '../helpers/expect-slice-outcome.js';
import { startFaultRig, type FaultRig } from '../helpers/fault-rig.js';
import { loggedErrorMessage } from '../helpers/logged-error.js';

// Transfer trouble: what happens on the wire between the export endpoint and the client.
// Each case runs the real CLI for one slice against the simulator (scripted) or the misbehaving
// gateway, with http timeouts of 600 ms and 3 attempts (test/helpers/fault-rig.ts).

describe('upstream faults: the transfer', () => {
  let fault: FaultRig;
  beforeAll(async () => {
    fault = await startFaultRig();
  });
  afterAll(async () => {
    await fault.close();
  });

  describe('connections that break', () => {
    it('fails a slice whose every attempt is reset, keeping its earlier rows', async () => {
      const slice = fault.slice('constituent.close');
      const earlier = await fault.loadGood(slice);
      fault.rig.simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [{ fault: 'reset' }, { fault: 'reset' }, { fault: 'reset' }]);
      const run = await fault.run(slice);
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_NETWORK', says: /broke off .*it is retried/, attempts: 3, withinMs: 5_000, earlier });
      expect(run.logLines.filter((line) => line.status === 'retrying')).toHaveLength(2);
    });

    it('fails a slice whose every body is cut short of its Content-Length, keeping its earlier rows', async () => {
      const slice = fault.slice('index');
      const earlier = await fault.loadGood(slice);
      fault.rig.simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [{ fault: 'truncate' }, { fault: 'truncate' }, { fault: 'truncate' }]);
      const run = await fault.run(slice);
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_NETWORK', says: /broke off/, attempts: 3, withinMs: 5_000, earlier });
    });

    it('retries a connection reset in the middle of the body, then loads', async () => {
      const slice = fault.slice('constituent.close');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((request, reply) => {
        if (request.number > 1) return reply.send(200, good.body, good.headers);
        reply.head(200, { ...good.headers, 'Content-Length': good.body.length });
        reply.write(good.body.subarray(0, 100));
        reply.after(20, () => reply.reset());
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceLoaded(fault, slice, run, { attempts: 2, withinMs: 5_000 });
      expect(run.logLines.find((line) => line.status === 'retrying')).toMatchObject({ code: 'EXPORT_NETWORK' });
    });

    it('retries a chunked body that stops in the middle of the ZIP, then loads', async () => {
      const slice = fault.slice('constituent.close');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((request, reply) => {
        reply.head(200, { ...good.headers, 'Transfer-Encoding': 'chunked' });
        const half = request.number > 1 ? good.body.length : 200;
        reply.write(`${half.toString(16)}\r\n`);
        reply.write(good.body.subarray(0, half));
        reply.write('\r\n');
        if (request.number === 1) return reply.after(20, () => reply.end()); // no last chunk: cut short
        reply.write('0\r\n\r\n');
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceLoaded(fault, slice, run, { attempts: 2, withinMs: 5_000 });
      expect(run.logLines.find((line) => line.status === 'retrying')).toMatchObject({ code: 'EXPORT_NETWORK' });
    });

    it('fails a gateway nobody listens on, after its attempts', async () => {
      const slice = fault.slice('index');
      const run = await fault.run(slice, { env: { REPORT_BASE_URL: 'http://127.0.0.1:9/' } });
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_NETWORK', says: /ECONNREFUSED/, attempts: 3, withinMs: 5_000 });
    });
  });

  describe('answers that are too slow', () => {
    it('fails a slice whose headers never come in time, after its attempts', async () => {
      const slice = fault.slice('index');
      const earlier = await fault.loadGood(slice);
      fault.gateway.handle(() => {}); // reads the request, never answers
      const run = await fault.run(slice, { through: 'gateway', settings: { retry: { attempts: 2 } } });
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_TIMEOUT', says: /timed out \(UND_ERR_HEADERS_TIMEOUT\)/, attempts: 2, withinMs: 4_000, earlier });
    });

    it('times out headers that trickle in one byte at a time', async () => {
      const slice = fault.slice('index');
      fault.gateway.handle((_request, reply) => {
        reply.write('HTTP/1.1 200 OK\r\nX-Slow: ');
        reply.every(50, () => reply.write('a'));
      });
      const run = await fault.run(slice, { through: 'gateway', settings: { retry: { attempts: 2 } } });
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_TIMEOUT', says: /timed out \(UND_ERR_HEADERS_TIMEOUT\)/, attempts: 2, withinMs: 4_000 });
    });

    it('retries a body that stalls longer than http.bodyTimeoutMs, then loads', async () => {
      const slice = fault.slice('constituent.close');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((request, reply) => {
        if (request.number > 1) return reply.send(200, good.body, good.headers);
        reply.head(200, { ...good.headers, 'Content-Length': good.body.length });
        reply.write(good.body.subarray(0, 100)); // and nothing more, on an open connection
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceLoaded(fault, slice, run, { attempts: 2, withinMs: 5_000 });
      expect(run.logLines.find((line) => line.status === 'retrying')).toMatchObject({ code: 'EXPORT_TIMEOUT' });
    });

    it('gives up on a slow-loris body that trickles a byte at a time forever', async () => {
      const slice = fault.slice('index');
      const earlier = await fault.loadGood(slice);
      fault.gateway.handle((_request, reply) => {
        reply.head(200, { 'Content-Type': 'application/json', 'Content-Length': 1_000_000 });
        reply.write('[');
        // Each byte comes well within http.bodyTimeoutMs (600 ms), so only a progress check ends it.
        reply.every(50, () => reply.write(' '));
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_TIMEOUT', says: /too slowly/, attempts: 3, withinMs: 8_000, earlier });
    });
  });

  describe('429 Too Many Requests', () => {
    it('waits for a Retry-After given as an HTTP-date, then loads', async () => {
      const slice = fault.slice('index');
      const { simulator } = fault.rig;
      // HTTP-dates have whole seconds: two seconds ahead is between one and two seconds away.
      const at = new Date(Date.now() + 2_000);
      simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [{ status: 429, headers: { 'Retry-After': at.toUTCString() } }]);
      const firstRequest = simulator.exportRequestTimes.length;
      const run = await fault.run(slice);
      await expectSliceLoaded(fault, slice, run, { attempts: 2, withinMs: 5_000 });
      const [asked, retried] = simulator.exportRequestTimes.slice(firstRequest);
      expect(retried! - asked!).toBeGreaterThanOrEqual(Math.floor(at.getTime() / 1000) * 1000 - asked! - 50);
      expect(retried! - asked!).toBeGreaterThanOrEqual(900);
      expect(run.logLines.find((line) => line.status === 'retrying')).toMatchObject({ code: 'EXPORT_RATE_LIMITED' });
    });

    it('waits no longer than retry.maxRetryAfterMs for a Retry-After of an hour', async () => {
      const slice = fault.slice('index');
      const { simulator } = fault.rig;
      simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [{ status: 429, headers: { 'Retry-After': '3600' } }]);
      const firstRequest = simulator.exportRequestTimes.length;
      const run = await fault.run(slice, { settings: { retry: { maxRetryAfterMs: 300 } } });
      await expectSliceLoaded(fault, slice, run, { attempts: 2, withinMs: 3_000 });
      const [asked, retried] = simulator.exportRequestTimes.slice(firstRequest);
      expect(retried! - asked!).toBeGreaterThanOrEqual(300);
    });

    it('fails a slice that is rate limited on every attempt, saying so', async () => {
      const slice = fault.slice('constituent.close');
      const earlier = await fault.loadGood(slice);
      const limited = { status: 429, headers: { 'Retry-After': '0' }, body: '{"error":"slow down"}' };
      fault.rig.simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [limited, limited, limited]);
      const run = await fault.run(slice);
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_RATE_LIMITED', says: /429 Too Many Requests.*slow down/, attempts: 3, withinMs: 5_000, earlier });
    });
  });

  describe('sizes announced and sent', () => {
    it('refuses a multi-gigabyte Content-Length at once, without reading or waiting for the body', async () => {
      const slice = fault.slice('constituent.close');
      const earlier = await fault.loadGood(slice);
      let hungUpAfterMs: number | undefined;
      fault.gateway.handle((_request, reply) => {
        const sentAt = performance.now();
        reply.socket.once('close', () => (hungUpAfterMs = performance.now() - sentAt));
        reply.head(200, { 'Content-Type': 'application/zip', 'Content-Length': 5 * 1024 ** 3 });
        reply.write('PK\u0003\u0004 and then nothing for a long while');
      });
      // Long timeouts: a client that waited for the body would hang here for a minute.
      const run = await fault.run(slice, { through: 'gateway', settings: { http: { bodyTimeoutMs: 60_000 } } });
      await expectSliceFailed(fault, slice, run, {
        code: 'EXPORT_TOO_LARGE',
        says: /announces 5368709120 bytes, over limits\.maxDownloadBytes \(2147483648\)/,
        attempts: 1,
        withinMs: 5_000,
        earlier,
      });
      expect(
        fault.gateway.requests.filter((request) => request.url.searchParams.get('date') === slice.reportDate && request.url.pathname.includes(`/${slice.portfolioId}/`)),
      ).toHaveLength(1);
      expect(hungUpAfterMs).toBeDefined(); // the client closed the connection rather than leave it to drain
    });

    it('stops an endless chunked body at limits.maxDownloadBytes', async () => {
      const slice = fault.slice('index');
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      fault.gateway.handle((_request, reply) => {
        reply.head(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
        reply.write('1\r\n[\r\n');
        reply.every(1, () => {
          for (let i = 0; i < 8 && !reply.closed; i += 1) {
            reply.write(`${chunk.length.toString(16)}\r\n`);
            reply.write(chunk);
            reply.write('\r\n');
            sent += chunk.length;
          }
        });
      });
      const run = await fault.run(slice, { through: 'gateway', settings: { limits: { maxDownloadBytes: 1024 * 1024 } } });
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_TOO_LARGE', says: /passed limits\.maxDownloadBytes \(1048576 bytes\)/, attempts: 1, withinMs: 3_000 });
      expect(sent).toBeLessThan(64 * 1024 * 1024);
    });

    it('retries a 503 whose error page never ends, without reading all of it', async () => {
      const slice = fault.slice('index');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((request, reply) => {
        if (request.number > 1) return reply.send(200, good.body, good.headers);
        reply.head(503, { 'Content-Type': 'text/html', 'Transfer-Encoding': 'chunked' });
        const page = Buffer.from(`<html><body>${'Service Unavailable '.repeat(3000)}</body></html>`);
        reply.every(1, () => {
          reply.write(`${page.length.toString(16)}\r\n`);
          reply.write(page);
          reply.write('\r\n');
        });
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceLoaded(fault, slice, run, { attempts: 2, withinMs: 5_000 });
      const retrying = run.logLines.find((line) => line.status === 'retrying');
      expect(retrying).toMatchObject({ code: 'EXPORT_SERVER_ERROR' });
      expect(loggedErrorMessage(retrying)).toMatch(/503 .*\[service said: <html><body>Service Unavailable/);
      expect(loggedErrorMessage(retrying).length).toBeLessThan(1_000);
    });

    it('reads a Content-Length of 0 as no data, even if bytes follow it', async () => {
      const slice = fault.slice('index');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((_request, reply) => {
        reply.head(200, { ...good.headers, 'Content-Length': 0, Connection: 'close' });
        reply.write(good.body);
        reply.end();
      });
      const run = await fault.run(slice, { through: 'gateway' });
      expect(run.code, run.stdout).toBe(0);
      expect(run.elapsedMs).toBeLessThan(3_000);
      expect(await fault.ledger(slice)).toMatchObject({ status: 'no_data', row_count: 0, error: null });
      expect(await fault.rows(slice)).toEqual([]);
    });
  });

  describe('answers that are not what they say', () => {
    it('fails a 302 redirect at once, naming where it pointed, and does not follow it with the token', async () => {
      const slice = fault.slice('index');
      fault.gateway.handle((request, reply) => {
        if (request.url.pathname === '/elsewhere') return reply.send(200, '[]', { 'Content-Type': 'application/json' });
        reply.send(302, '', { Location: `${fault.gateway.url}/elsewhere` });
      });
      const seenBefore = fault.gateway.requests.length;
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceFailed(fault, slice, run, {
        code: 'EXPORT_REJECTED',
        says: /answered 302 .*redirect to http:\/\/127\.0\.0\.1:\d+\/elsewhere; check REPORT_BASE_URL/,
        attempts: 1,
        withinMs: 5_000,
      });
      expect(fault.gateway.requests.slice(seenBefore).map((request) => request.url.pathname)).not.toContain('/elsewhere');
    });

    it('loads a valid JSON file sent as Content-Type text/html', async () => {
      const slice = fault.slice('index');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((_request, reply) => reply.send(200, good.body, { ...good.headers, 'Content-Type': 'text/html; charset=utf-8' }));
      const run = await fault.run(slice, { through: 'gateway' });
      const { rows } = await expectSliceLoaded(fault, slice, run, { attempts: 1, withinMs: 3_000 });
      expect(rows.length).toBeGreaterThan(0);
    });

    it('loads a file sent with Content-Encoding: gzip although none was asked for', async () => {
      const slice = fault.slice('constituent.close');
      const good = await fault.goodFile(slice);
      const reference = fault.slice('constituent.close');
      const referenceGood = await fault.goodFile(reference);
      fault.gateway.handle((request, reply) => {
        const file = request.url.pathname.includes(`/${slice.portfolioId}/`) ? good : referenceGood;
        const gzipped = request.url.pathname.includes(`/${slice.portfolioId}/`);
        reply.send(200, gzipped ? gzipSync(file.body) : file.body, { ...file.headers, ...(gzipped ? { 'Content-Encoding': 'gzip' } : {}) });
      });
      const run = await fault.run(slice, { through: 'gateway' });
      const { ledger, rows } = await expectSliceLoaded(fault, slice, run, { attempts: 1, withinMs: 3_000 });
      expect(rows.length).toBeGreaterThan(0);
      // The ledger describes the file, not its transfer encoding: its size and hash are the plain file's.
      expect(ledger.bytes).toBe(good.body.length);
      await expectSliceLoaded(fault, reference, await fault.run(reference, { through: 'gateway' }), { attempts: 1, withinMs: 3_000 });
      expect((await fault.rows(slice)).length).toBe((await fault.rows(reference)).length);
    });

    it('fails a body that claims Content-Encoding: gzip but is not gzip', async () => {
      const slice = fault.slice('index');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((_request, reply) => reply.send(200, good.body, { ...good.headers, 'Content-Encoding': 'gzip' }));
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceFailed(fault, slice, run, { code: 'FILE_INVALID', says: /Content-Encoding gzip.*cannot be decoded/, attempts: 1, withinMs: 3_000 });
    });

    it('loads an answer preceded by 103 Early Hints', async () => {
      const slice = fault.slice('index');
      const good = await fault.goodFile(slice);
      fault.gateway.handle((_request, reply) => {
        reply.write('HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n');
        reply.send(200, good.body, good.headers);
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceLoaded(fault, slice, run, { attempts: 1, withinMs: 3_000 });
    });

    it('fails a close-delimited body that ends in the middle of the JSON, keeping the earlier rows', async () => {
      const slice = fault.slice('index');
      const earlier = await fault.loadGood(slice);
      const good = await fault.goodFile(slice);
      fault.gateway.handle((_request, reply) => {
        // No Content-Length and not chunked: the body is whatever comes before the connection closes.
        reply.head(200, { ...good.headers, Connection: 'close' });
        reply.write(good.body.subarray(0, Math.floor(good.body.length / 2)));
        reply.end();
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceFailed(fault, slice, run, {
        code: 'FILE_INVALID',
        says: /\.json: the file ends inside record \d+: it was cut short/,
        attempts: 1,
        withinMs: 3_000,
        earlier,
      });
    });

    it('fails a garbled Content-Length after its attempts, saying the answer was not HTTP', async () => {
      const slice = fault.slice('index');
      fault.gateway.handle((_request, reply) => {
        reply.head(200, { 'Content-Type': 'application/json', 'Content-Length': '12abc' });
        reply.write('[]');
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceFailed(fault, slice, run, { code: 'EXPORT_NETWORK', says: /Content-Length/i, attempts: 3, withinMs: 5_000 });
    });
  });
});
