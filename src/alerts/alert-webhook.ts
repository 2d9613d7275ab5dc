import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { DEFAULT_DATABASE_URL } from '../config/load-config.js';
import { describeUrl, redactSecrets } from '../redaction/redact.js';
import { ConfigError } from '../errors/sync-error.js';
import { parseRetryAfter } from '../http/parse-retry-after.js';
import { readSmallBody } from '../http/read-small-body.js';
import type { Logger } from '../logging/logger.js';
import { printableText } from '../text/printable-text.js';
import { alertBody } from './alert-body.js';
import type { AlertFormat, AlertOrigin, AlertSummary } from './alert-summary.js';
import { RetryPolicy } from '../retry/retry-policy.js';

/** Longest wait between two attempts, whether from backoff or a receiver's Retry-After. */
const MAX_DELAY_MS = 30_000;
/** Most of a receiver's answer read (and thrown away): Slack says "ok", nobody needs more. */
const BODY_LIMIT = 16 * 1024;

export interface AlertWebhookOptions {
  /**
   * Where alerts go. A secret: a Slack webhook URL carries its token in its path. It is never
   * logged, put in an error or returned, not even its origin. A `user:password@` in it is sent
   * as HTTP Basic authorization (undici refuses a URL holding credentials).
   */
  readonly url: URL;
  /** How the body is shaped. @defaultValue 'slack' */
  readonly format?: AlertFormat;
  /**
   * Where every alert says it comes from: an operator of several deployments must know which one
   * is in trouble. @defaultValue this machine's host name, and the deployment `report-sync`
   */
  readonly origin?: Partial<AlertOrigin>;
  /**
   * The whole of one attempt (connect, headers and body), in milliseconds: a receiver that
   * accepts the connection and never answers costs this much, not a load's night.
   * @defaultValue 10000
   */
  readonly timeoutMs?: number;
  /** Attempts in all, the first included. @defaultValue 4 */
  readonly attempts?: number;
  /**
   * Wait before the second attempt, doubling per attempt with equal jitter, capped at `MAX_DELAY_MS`;
   * a receiver's `Retry-After` (on 429 or 5xx) is honoured instead, under the same cap.
   * @defaultValue 1000
   */
  readonly baseDelayMs?: number;
  /**
   * Where requests go; a given dispatcher is the caller's and is not closed here.
   * @defaultValue an undici Agent without keep-alive, closed by {@link AlertWebhook.close}: a socket
   *   kept alive for one message a night would be stale by the next.
   */
  readonly dispatcher?: Dispatcher;
  readonly logger: Logger;
  /** Called once per {@link AlertWebhook.send} with how it ended, for a metric; what it throws is ignored. */
  readonly onResult?: (result: 'delivered' | 'failed') => void;
  /**
   * A shutdown: once aborted, a send stops retrying, aborts the request in flight and resolves
   * false; an alert is never worth holding a stopping process.
   */
  readonly signal?: AbortSignal;
}

/** How one attempt ended. */
type Attempt = { readonly ok: true } | { readonly ok: false; readonly retry: boolean; readonly problem: string; readonly hint: string; readonly retryAfterMs?: number };

/**
 * Sends the one alert of a run or night to a webhook, retried on 429, 5xx, network trouble and
 * timeouts; {@link AlertWebhook.send} never throws and is bounded, so a broken chat tool cannot
 * fail or stall a load. Hazard: the URL is a credential, so network errors are logged by code only.
 */
export class AlertWebhook {
  readonly #url: URL;
  /** `Basic …` from the URL's userinfo, or undefined when it has none. */
  readonly #authorization: string | undefined;
  /** Every form of the URL and its credentials that must never reach a log line. */
  readonly #secrets: readonly string[];
  readonly #format: AlertFormat;
  readonly #origin: AlertOrigin;
  readonly #timeoutMs: number;
  readonly #attempts: number;
  readonly #retry: RetryPolicy;
  readonly #dispatcher: Dispatcher;
  readonly #ownedAgent: Agent | undefined;
  readonly #logger: Logger;
  readonly #onResult: ((result: 'delivered' | 'failed') => void) | undefined;
  readonly #signal: AbortSignal | undefined;
  /** Aborted by {@link AlertWebhook.close}, so that a send in flight ends before its agent closes. */
  readonly #closing = new AbortController();

  /** @throws ConfigError when the URL is not http(s) (without quoting it) or a number option is out of range */
  constructor(options: AlertWebhookOptions) {
    if (options.url.protocol !== 'http:' && options.url.protocol !== 'https:') {
      throw new ConfigError('the alert webhook URL must start with http:// or https://');
    }
    const url = new URL(options.url.href);
    this.#authorization = basicAuthorization(url);
    url.username = '';
    url.password = '';
    this.#url = url;
    const { username, password } = options.url;
    this.#secrets = [
      options.url.href,
      url.href,
      `${url.origin}${url.pathname}`,
      url.pathname,
      url.search,
      url.host,
      url.hostname,
      username,
      password,
      safeDecode(username),
      safeDecode(password),
    ];
    this.#format = options.format ?? 'slack';
    this.#origin = { host: options.origin?.host ?? hostname(), deployment: options.origin?.deployment ?? 'report-sync' };
    this.#timeoutMs = positive('timeoutMs', options.timeoutMs ?? 10_000);
    this.#attempts = Math.floor(positive('attempts', options.attempts ?? 4));
    // One sender per alert: nobody to spread a Retry-After from.
    this.#retry = new RetryPolicy({ baseDelayMs: options.baseDelayMs ?? 1_000, maxDelayMs: MAX_DELAY_MS, spreadRetryAfter: false });
    this.#logger = options.logger;
    this.#onResult = options.onResult;
    this.#signal = options.signal;
    if (options.dispatcher) {
      this.#dispatcher = options.dispatcher;
    } else {
      // pipelining 0: no keep-alive. The timeouts back up the per-attempt abort below.
      this.#ownedAgent = new Agent({
        pipelining: 0,
        connect: { timeout: this.#timeoutMs },
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      this.#dispatcher = this.#ownedAgent;
    }
  }

  /**
   * Sends one alert. True once a receiver answered 2xx; false when it could not be delivered (the
   * reason is logged as one `error` line), when the signal aborted it, or after {@link close}.
   * Never throws.
   */
  async send(summary: AlertSummary): Promise<boolean> {
    let kind = 'unknown';
    let attempts = 0;
    let last: Exclude<Attempt, { ok: true }> | undefined;
    let delivered = false;
    try {
      kind = String(summary.kind);
      const body = JSON.stringify(alertBody({ ...summary, origin: summary.origin ?? this.#origin }, this.#format));
      while (attempts < this.#attempts) {
        if (this.#stopped()) break;
        attempts += 1;
        const attempt = await this.#attempt(body);
        if (attempt.ok) {
          delivered = true;
          break;
        }
        last = attempt;
        if (!attempt.retry || attempts >= this.#attempts || this.#stopped()) break;
        await this.#wait(attempts, attempt.retryAfterMs);
      }
    } catch (error) {
      // Only a bug of ours gets here (an attempt catches its own trouble): the alert is dropped, the load goes on.
      last = { ok: false, retry: false, problem: `unexpected error: ${this.#safe(error)}`, hint: 'report this as a bug' };
    }
    if (!delivered && this.#stopped() && (last === undefined || last.retry)) {
      last = {
        ok: false,
        retry: false,
        problem: this.#closing.signal.aborted ? 'closed' : 'shutting down',
        hint: 'the process stopped before the alert webhook answered; the alert was dropped',
      };
    }
    this.#log(delivered, kind, attempts, last);
    try {
      this.#onResult?.(delivered ? 'delivered' : 'failed');
    } catch {
      // A metric's trouble must not turn an alert into a failed load.
    }
    return delivered;
  }

  /**
   * Ends a send in flight (it resolves false) and closes the agent this instance owns; a given
   * dispatcher is left to its owner. Later sends resolve false at once.
   */
  async close(): Promise<void> {
    this.#closing.abort();
    try {
      await this.#ownedAgent?.close();
    } catch {
      // Closing twice, or an agent already destroyed: nothing is left to release.
    }
  }

  /** One POST, bounded by timeoutMs from connect to the last byte of the answer. */
  async #attempt(body: string): Promise<Attempt> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    const stop = () => controller.abort();
    // Listeners, not AbortSignal.any: a long-lived shutdown signal would keep every attempt's signal alive.
    this.#signal?.addEventListener('abort', stop, { once: true });
    this.#closing.signal.addEventListener('abort', stop, { once: true });
    try {
      if (this.#stopped()) controller.abort();
      const response = await request(this.#url, {
        dispatcher: this.#dispatcher,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'report-sync', ...(this.#authorization ? { authorization: this.#authorization } : {}) },
        body,
        signal: controller.signal,
      });
      // Read to free the socket, never shown: an error page may echo the request, URL included.
      await readSmallBody(response.body, BODY_LIMIT);
      return classifyStatus(response.statusCode, response.headers['retry-after']);
    } catch (error) {
      if (timedOut) {
        return { ok: false, retry: true, problem: `timed out after ${this.#timeoutMs} ms`, hint: RETRIED_HINT };
      }
      return { ok: false, retry: true, problem: this.#safe(error), hint: RETRIED_HINT };
    } finally {
      clearTimeout(timer);
      this.#signal?.removeEventListener('abort', stop);
      this.#closing.signal.removeEventListener('abort', stop);
    }
  }

  /** The wait before attempt `attempt + 1`; a shutdown cuts it short. */
  async #wait(attempt: number, retryAfterMs: number | undefined): Promise<void> {
    const delay = this.#retry.delayMs(attempt, retryAfterMs);
    const signals = [this.#closing.signal, ...(this.#signal ? [this.#signal] : [])];
    const controller = new AbortController();
    const stop = () => controller.abort();
    for (const signal of signals) signal.addEventListener('abort', stop, { once: true });
    try {
      await sleep(Math.round(delay), undefined, { signal: controller.signal });
    } catch {
      // Aborted: the loop sees #stopped() and gives up.
    } finally {
      for (const signal of signals) signal.removeEventListener('abort', stop);
    }
  }

  #stopped(): boolean {
    return this.#closing.signal.aborted || this.#signal?.aborted === true;
  }

  /**
   * What went wrong, safe to log: the error's code when it has one (`ECONNREFUSED`,
   * `UND_ERR_SOCKET`…), else its message with every form of the URL cut out.
   */
  #safe(error: unknown): string {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,63}$/.test(code)) return code;
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return printableText(redactSecrets(message, this.#secrets), 200);
  }

  #log(delivered: boolean, kind: string, attempts: number, last: Exclude<Attempt, { ok: true }> | undefined): void {
    try {
      if (delivered) {
        if (attempts > 1) this.#logger.info({ kind, attempts }, 'alert delivered');
        else this.#logger.debug({ kind, attempts }, 'alert delivered');
        return;
      }
      this.#logger.error(
        { kind, attempts, lastProblem: last?.problem ?? 'not sent', hint: last?.hint ?? 'the alert webhook was closed before the alert' },
        'could not deliver the alert',
      );
    } catch {
      // A broken log destination is no reason to throw from an alert.
    }
  }
}

/**
 * The `Authorization` value for a URL's `user:password@`, as a browser or curl sends it: the
 * userinfo percent-decoded, then base64 (RFC 7617). Undefined when the URL has none.
 */
function basicAuthorization(url: URL): string | undefined {
  if (!url.username && !url.password) return undefined;
  return `Basic ${Buffer.from(`${safeDecode(url.username)}:${safeDecode(url.password)}`, 'utf8').toString('base64')}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const RETRIED_HINT = 'check that the alert webhook is up and reachable from here; report-sync retried it with backoff';

/** What an answer means for delivery. No redirect is followed: its target is not the URL that was configured. */
function classifyStatus(status: number, retryAfter: string | string[] | undefined): Attempt {
  if (status >= 200 && status < 300) return { ok: true };
  const problem = `HTTP ${status}`;
  if (status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(retryAfter);
    return { ok: false, retry: true, problem, hint: RETRIED_HINT, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  }
  if (status >= 300 && status < 400) {
    return {
      ok: false,
      retry: false,
      problem: `${problem} (a redirect, which report-sync does not follow)`,
      hint: 'set REPORT_ALERT_WEBHOOK_URL to the address the alert webhook redirects to',
    };
  }
  return {
    ok: false,
    retry: false,
    problem,
    hint: 'the receiver refused the alert: check REPORT_ALERT_WEBHOOK_URL (a revoked or mistyped webhook) and REPORT_ALERT_WEBHOOK_FORMAT',
  };
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new ConfigError(`alert webhook option ${name} must be a number above 0, not ${value}`);
  return value;
}

/**
 * The alert webhook from `REPORT_ALERT_WEBHOOK_URL` (unset: none) and `REPORT_ALERT_WEBHOOK_FORMAT`;
 * alerts name the host and `REPORT_ALERT_DEPLOYMENT` (else the password-less warehouse URL).
 * Checked at start, so a typo stops the command instead of losing the alert.
 * @throws ConfigError naming the variable and what it allows; never quoting the URL, which is a secret
 */
export function alertWebhookFromEnvironment(env: Readonly<Record<string, string | undefined>>, options: Omit<AlertWebhookOptions, 'url' | 'format'>): AlertWebhook | undefined {
  const raw = env.REPORT_ALERT_WEBHOOK_URL?.trim();
  if (!raw) return undefined;
  const formatText = env.REPORT_ALERT_WEBHOOK_FORMAT?.trim() || 'slack';
  if (formatText !== 'slack' && formatText !== 'json') {
    throw new ConfigError(`REPORT_ALERT_WEBHOOK_FORMAT ${JSON.stringify(printableText(formatText, 40))} is not an alert format; use slack (the default) or json`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('REPORT_ALERT_WEBHOOK_URL is not a URL; set it to the http:// or https:// address of the webhook, or unset it');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('REPORT_ALERT_WEBHOOK_URL must start with http:// or https://; set it to the address of the webhook, or unset it');
  }
  const deployment = printableText(env.REPORT_ALERT_DEPLOYMENT?.trim() || warehouseName(env.DATABASE_URL?.trim() || DEFAULT_DATABASE_URL), 200);
  return new AlertWebhook({ ...options, url, format: formatText, origin: { deployment } });
}

/**
 * The warehouse as an alert may name it: a URL with its password redacted, without query or
 * fragment; a `sqlite:` path as given.
 */
function warehouseName(databaseUrl: string): string {
  if (databaseUrl.startsWith('sqlite:')) return databaseUrl.split(/[?#]/)[0]!;
  return describeUrl(databaseUrl) ?? 'the warehouse';
}
