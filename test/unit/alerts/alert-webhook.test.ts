import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { AlertSummary } from '../../../src/alerts/alert-summary.js';
import { AlertWebhook, alertWebhookFromEnvironment, type AlertWebhookOptions } from '../../../src/alerts/alert-webhook.js';
import { ConfigError } from '../../../src/errors/sync-error.js';
import { FailureTally } from '../../../src/outcomes/failure-groups.js';
import { createLogger } from '../../../src/logging/logger.js';
import { Receiver, SECRET_PATH, type Answer } from '../../helpers/webhook-receiver.js';
import { until } from '../../helpers/until.js';

/** A log sink that keeps every line. */
class LogSink extends Writable {
  text = '';

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }

  get lines(): Record<string, unknown>[] {
    return this.text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

function summary(message = '403 for portfolio 1003'): AlertSummary {
  const tally = new FailureTally();
  for (let d = 1; d <= 31; d += 1) {
    for (const reportType of ['index', 'constituent.close'] as const) {
      for (const portfolioId of [1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014]) {
        tally.add({ portfolioId, reportType, reportDate: `2024-01-${String(d).padStart(2, '0')}` }, 'EXPORT_FORBIDDEN', message);
      }
    }
  }
  return {
    kind: 'nightly',
    title: 'nightly sync of 2024-01-31: 744 of 800 slices failed',
    counts: { loaded: 56, failed: 744 },
    failures: tally.summary(),
    retryCommand: 'report-sync backfill --from 2024-01-01 --to 2024-01-31 --only-missing',
    at: new Date('2024-02-01T06:00:00Z'),
  };
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(script: Answer[]): Promise<Receiver> {
  const started = await Receiver.start(script);
  cleanups.push(() => started.close());
  return started;
}

/** A webhook with quick timings and its log and results kept; closed after the test. */
function webhook(url: URL, options: Partial<AlertWebhookOptions> = {}): { webhook: AlertWebhook; logs: LogSink; results: string[] } {
  const logs = new LogSink();
  const results: string[] = [];
  const instance = new AlertWebhook({
    url,
    timeoutMs: 200,
    baseDelayMs: 10,
    logger: createLogger({ level: 'debug', pretty: false, destination: logs }),
    onResult: (result) => results.push(result),
    ...options,
  });
  cleanups.push(() => instance.close());
  return { webhook: instance, logs, results };
}

function expectNoSecret(logs: LogSink, url: URL): void {
  expect(logs.text).not.toContain('sEcReTtOkEn123');
  expect(logs.text).not.toContain('/services/');
  expect(logs.text).not.toContain(url.origin);
}

describe('AlertWebhook', () => {
  it('posts one Slack message per send, with the failures grouped and the retry command', async () => {
    const rx = await receiver([{ status: 200, body: 'ok' }]);
    const { webhook: hook, logs, results } = webhook(rx.url);
    expect(await hook.send(summary())).toBe(true);
    expect(rx.requests).toHaveLength(1);
    const [request] = rx.requests;
    expect(request!.method).toBe('POST');
    expect(request!.url).toBe(SECRET_PATH);
    expect(request!.headers['content-type']).toBe('application/json');
    const text = request!.body.text as string;
    expect(text).toContain('*nightly sync of 2024-01-31: 744 of 800 slices failed*');
    expect(text).toContain('*EXPORT_FORBIDDEN*: 744 slices');
    // The alert's printed lines are the product: checked whole.
    expect(text).toContain('• portfolio 1003: 62 slices, e.g. constituent.close 2024-01-01, index 2024-01-01, index 2024-01-02');
    expect(text).toContain('• … 6 more portfolios (372 slices)');
    expect(text).toContain('`report-sync backfill --from 2024-01-01 --to 2024-01-31 --only-missing`');
    expect(Array.isArray(request!.body.blocks)).toBe(true);
    expect(results).toEqual(['delivered']);
    // First-try success is worth a debug line only.
    expect(logs.lines.map((line) => [line.level, line.msg, line.attempts])).toEqual([[20, 'alert delivered', 1]]);
    expectNoSecret(logs, rx.url);
  });

  it('posts the plain JSON form when asked', async () => {
    const rx = await receiver([{ status: 204 }]);
    const { webhook: hook } = webhook(rx.url, { format: 'json' });
    expect(await hook.send(summary('403\r\nforged'))).toBe(true);
    const body = rx.requests[0]!.body;
    expect(body).toMatchObject({
      source: 'report-sync',
      kind: 'nightly',
      title: 'nightly sync of 2024-01-31: 744 of 800 slices failed',
      at: '2024-02-01T06:00:00.000Z',
      counts: { loaded: 56, failed: 744 },
    });
    expect(body.retryCommand).toBe('report-sync backfill --from 2024-01-01 --to 2024-01-31 --only-missing');
    const failures = body.failures as { total: number; groups: { code: string; portfolioId: number; slices: number; examples: Record<string, unknown>[] }[] };
    expect(failures.total).toBe(744);
    expect(failures.groups).toHaveLength(12);
    expect(failures.groups[0]).toMatchObject({ code: 'EXPORT_FORBIDDEN', portfolioId: 1003, slices: 62 });
    expect(failures.groups[0]!.examples[0]).toEqual({ portfolioId: 1003, reportType: 'constituent.close', reportDate: '2024-01-01', message: '403\\x0d\\x0aforged' });
  });

  it('retries a 503 and a reset connection, then delivers on the third attempt', async () => {
    const rx = await receiver([{ status: 503 }, 'destroy', { status: 200, body: 'ok' }]);
    const { webhook: hook, logs, results } = webhook(rx.url);
    expect(await hook.send(summary())).toBe(true);
    expect(rx.requests).toHaveLength(3);
    expect(results).toEqual(['delivered']);
    expect(logs.lines.map((line) => [line.level, line.msg, line.kind, line.attempts])).toEqual([[30, 'alert delivered', 'nightly', 3]]);
    expectNoSecret(logs, rx.url);
  });

  it('does not retry a 400: the URL or the receiver is wrong, and one error line says so', async () => {
    const rx = await receiver([{ status: 400, body: `invalid_payload for ${SECRET_PATH}` }]);
    const { webhook: hook, logs, results } = webhook(rx.url);
    expect(await hook.send(summary())).toBe(false);
    expect(rx.requests).toHaveLength(1);
    expect(results).toEqual(['failed']);
    const lines = logs.lines;
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, msg: 'could not deliver the alert', kind: 'nightly', attempts: 1, lastProblem: 'HTTP 400' });
    expect(lines[0]!.hint).toContain('REPORT_ALERT_WEBHOOK_URL');
    expectNoSecret(logs, rx.url);
  });

  it('does not follow a redirect, and says so', async () => {
    const rx = await receiver([{ status: 302, headers: { location: `http://127.0.0.1:1${SECRET_PATH}` } }]);
    const { webhook: hook, logs, results } = webhook(rx.url);
    expect(await hook.send(summary())).toBe(false);
    expect(rx.requests).toHaveLength(1);
    expect(results).toEqual(['failed']);
    expect(logs.lines[0]!.lastProblem).toMatch(/^HTTP 302 .*redirect/);
    expectNoSecret(logs, rx.url);
  });

  it('gives up on a receiver that never answers within about attempts × timeoutMs, without throwing', async () => {
    const rx = await receiver(['hang']);
    const { webhook: hook, logs, results } = webhook(rx.url, { attempts: 3, timeoutMs: 200, baseDelayMs: 10 });
    const started = Date.now();
    await expect(hook.send(summary())).resolves.toBe(false);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(3 * 200 - 20);
    expect(elapsed).toBeLessThan(3 * 200 + 1_000);
    expect(rx.requests).toHaveLength(3);
    expect(results).toEqual(['failed']);
    expect(logs.lines).toHaveLength(1);
    expect(logs.lines[0]).toMatchObject({ level: 50, msg: 'could not deliver the alert', attempts: 3, lastProblem: 'timed out after 200 ms' });
    expectNoSecret(logs, rx.url);
  });

  it('logs a refused connection by its code, never the address', async () => {
    const rx = await receiver([{ status: 200 }]);
    const url = rx.url;
    await rx.close();
    const { webhook: hook, logs, results } = webhook(url, { attempts: 2 });
    expect(await hook.send(summary())).toBe(false);
    expect(results).toEqual(['failed']);
    expect(logs.lines).toHaveLength(1);
    expect(logs.lines[0]).toMatchObject({ attempts: 2, lastProblem: 'ECONNREFUSED' });
    expectNoSecret(logs, url);
  });

  it('honours Retry-After', async () => {
    const rx = await receiver([{ status: 429, headers: { 'retry-after': '1' } }, { status: 200 }]);
    const { webhook: hook, results } = webhook(rx.url);
    expect(await hook.send(summary())).toBe(true);
    expect(rx.requests).toHaveLength(2);
    expect(rx.requests[1]!.at - rx.requests[0]!.at).toBeGreaterThanOrEqual(950);
    expect(results).toEqual(['delivered']);
  });

  it('stops promptly when the signal aborts between attempts', async () => {
    const rx = await receiver([{ status: 503 }]);
    const shutdown = new AbortController();
    const { webhook: hook, logs, results } = webhook(rx.url, { baseDelayMs: 20_000, signal: shutdown.signal });
    const sending = hook.send(summary());
    await until(() => rx.requests.length === 1, 5_000, 'the receiver to get the alert', 5);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const aborted = Date.now();
    shutdown.abort();
    expect(await sending).toBe(false);
    expect(Date.now() - aborted).toBeLessThan(500);
    expect(rx.requests).toHaveLength(1);
    expect(results).toEqual(['failed']);
    expect(logs.lines).toHaveLength(1);
    expect(logs.lines[0]).toMatchObject({ level: 50, lastProblem: 'shutting down', attempts: 1 });
  });

  it('aborts the request in flight when the signal aborts', async () => {
    const rx = await receiver(['hang']);
    const shutdown = new AbortController();
    const { webhook: hook, results } = webhook(rx.url, { timeoutMs: 20_000, signal: shutdown.signal });
    const sending = hook.send(summary());
    await until(() => rx.requests.length === 1, 5_000, 'the receiver to get the alert', 5);
    const aborted = Date.now();
    shutdown.abort();
    expect(await sending).toBe(false);
    expect(Date.now() - aborted).toBeLessThan(500);
    expect(rx.requests).toHaveLength(1);
    expect(results).toEqual(['failed']);
    // An already aborted signal: nothing is sent at all.
    expect(await hook.send(summary())).toBe(false);
    expect(rx.requests).toHaveLength(1);
  });

  it('escapes control characters and markup from a failure message in the Slack body', async () => {
    const rx = await receiver([{ status: 200 }]);
    const { webhook: hook } = webhook(rx.url);
    expect(await hook.send(summary('<script>alert(1)</script> & <!channel>\u001b[2J\r\nforged'))).toBe(true);
    const sent = JSON.stringify(rx.requests[0]!.body);
    expect(sent).not.toContain('<script>');
    expect(sent).not.toContain('<!channel>');
    expect(sent).not.toMatch(/\\u00(?!0a)[01][0-9a-f]/i);
    // The escaped text itself is what is checked.
    expect(rx.requests[0]!.body.text).toContain('EXPORT_FORBIDDEN: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;!channel&gt;\\x1b[2J\\x0d\\x0aforged');
  });

  it('leaves a given dispatcher open, and sends nothing once closed', async () => {
    const rx = await receiver([{ status: 200 }]);
    const agent = new Agent();
    cleanups.push(() => agent.close());
    const { webhook: hook, results } = webhook(rx.url, { dispatcher: agent });
    expect(await hook.send(summary())).toBe(true);
    await hook.close();
    expect(agent.closed).toBe(false);
    expect(await hook.send(summary())).toBe(false);
    expect(rx.requests).toHaveLength(1);
    expect(results).toEqual(['delivered', 'failed']);
  });
});

describe('alertWebhookFromEnvironment', () => {
  const logger = createLogger({ level: 'silent' });

  it('sends the userinfo of the URL as Basic authorization, to the URL without it, and logs neither', async () => {
    const rx = await receiver([{ status: 400 }]);
    const url = new URL(rx.url.href);
    url.username = 'hook-user';
    url.password = 'Zq9%2Fp%40ss'; // "Zq9/p@ss", percent-encoded as a URL holds it
    const { webhook: hook, logs } = webhook(url);
    expect(await hook.send(summary())).toBe(false);
    const [request] = rx.requests;
    expect(request!.url).toBe(SECRET_PATH);
    expect(request!.headers.authorization).toBe(`Basic ${Buffer.from('hook-user:Zq9/p@ss').toString('base64')}`);
    // The refusal is logged; neither the credentials nor the header value are.
    expect(logs.lines.map((line) => line.msg)).toEqual(['could not deliver the alert']);
    for (const secret of ['Zq9', 'hook-user', Buffer.from('hook-user:Zq9/p@ss').toString('base64')]) expect(logs.text).not.toContain(secret);
    expectNoSecret(logs, rx.url);
  });

  it('sends no Authorization header to a URL without userinfo', async () => {
    const rx = await receiver([{ status: 200 }]);
    const { webhook: hook } = webhook(rx.url);
    expect(await hook.send(summary())).toBe(true);
    expect(rx.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('is undefined when REPORT_ALERT_WEBHOOK_URL is unset or empty', () => {
    expect(alertWebhookFromEnvironment({}, { logger })).toBeUndefined();
    expect(alertWebhookFromEnvironment({ REPORT_ALERT_WEBHOOK_URL: '  ' }, { logger })).toBeUndefined();
  });

  it('builds a webhook from a valid URL and format', async () => {
    const hook = alertWebhookFromEnvironment({ REPORT_ALERT_WEBHOOK_URL: ` https://hooks.example.com${SECRET_PATH} `, REPORT_ALERT_WEBHOOK_FORMAT: 'json' }, { logger });
    expect(hook).toBeInstanceOf(AlertWebhook);
    await hook!.close();
  });

  it.each([`ftp://hooks.example.com${SECRET_PATH}`, `hooks.example.com${SECRET_PATH}`, `http://[${SECRET_PATH}`])('refuses %s, naming the variable but not its value', (value) => {
    let thrown: unknown;
    try {
      alertWebhookFromEnvironment({ REPORT_ALERT_WEBHOOK_URL: value }, { logger });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    const message = (thrown as Error).message;
    expect(message).toContain('REPORT_ALERT_WEBHOOK_URL');
    expect(message).toMatch(/https?:\/\//);
    expect(message).not.toContain('sEcReTtOkEn123');
    expect(message).not.toContain('hooks.example.com');
  });

  it.each([
    ['REPORT_ALERT_DEPLOYMENT when set', { REPORT_ALERT_DEPLOYMENT: ' reports-eu ', DATABASE_URL: 'postgres://sync:pw@db.eu:5432/reports' }, 'reports-eu'],
    [
      'else the warehouse, its password redacted',
      { DATABASE_URL: 'postgres://sync:s3cr3t-pw@db.eu:5432/reports?sslmode=require' },
      'postgres://sync:[redacted]@db.eu:5432/reports',
    ],
    ['else the default warehouse', {}, 'sqlite:./data/warehouse.sqlite'],
    // URLs typed wrong, with a password short enough to slip through the logger's net.
    ['else a one-slash warehouse URL, without its password', { DATABASE_URL: 'postgres:/sync:s3c@db.eu/reports' }, 'postgres:/sync:[redacted]@db.eu/reports'],
    ['else a scheme-less warehouse URL, without its password', { DATABASE_URL: 'sync:s3c@db.eu:5432/reports' }, 'sync:[redacted]@db.eu:5432/reports'],
    ['else a warehouse URL whose password holds a slash, without it', { DATABASE_URL: 'postgres://sync:1/s3c@db.eu/reports' }, 'postgres://sync:[redacted]@db.eu/reports'],
  ])('names this host and the deployment in every alert: %s', async (_, env, deployment) => {
    const rx = await receiver([{ status: 200 }]);
    const hook = alertWebhookFromEnvironment({ REPORT_ALERT_WEBHOOK_URL: rx.url.href, REPORT_ALERT_WEBHOOK_FORMAT: 'json', ...env }, { logger })!;
    cleanups.push(() => hook.close());
    expect(await hook.send(summary())).toBe(true);
    expect(rx.requests[0]!.body).toMatchObject({ host: hostname(), deployment });
    expect(JSON.stringify(rx.requests[0]!.body)).not.toContain('s3cr3t-pw');
    expect(JSON.stringify(rx.requests[0]!.body)).not.toContain('s3c@');
  });

  it('refuses an unknown format, naming the variable and what it allows', () => {
    expect(() => alertWebhookFromEnvironment({ REPORT_ALERT_WEBHOOK_URL: `https://hooks.example.com${SECRET_PATH}`, REPORT_ALERT_WEBHOOK_FORMAT: 'teams' }, { logger })).toThrow(
      ConfigError,
    );
    expect(() => alertWebhookFromEnvironment({ REPORT_ALERT_WEBHOOK_URL: `https://hooks.example.com${SECRET_PATH}`, REPORT_ALERT_WEBHOOK_FORMAT: 'teams' }, { logger })).toThrow(
      /REPORT_ALERT_WEBHOOK_FORMAT "teams" .*slack.*json/,
    );
  });
});
