import contentDisposition from 'content-disposition';
import { request, type Dispatcher } from 'undici';
import type { TokenSource } from '../auth/token-source.js';
import { ExportError, NETWORK_ERROR_CODES, SyncError } from '../errors/sync-error.js';
import type { ExportFormat } from '../reports/report-types.js';
import { describeSlice, type Slice } from '../slice/slice.js';
import { classifyExportStatus } from './classify-export-status.js';
import { decodeContentEncoding } from './decode-content-encoding.js';
import { guardBodyProgress } from './guard-body-progress.js';
import { joinUrl } from '../http/join-url.js';
import type { RequestGate } from './request-gate.js';
import { escapeControlCharacters } from '../text/printable-text.js';
import { redactSecrets } from '../redaction/redact.js';
import { readSmallBody } from '../http/read-small-body.js';
import type { SpoolDirectory } from './spool-directory.js';
import { SpooledBody } from './spooled-body.js';
import { DownloadSlots } from './download-slots.js';
import { tlsVerificationError } from '../http/tls-verification-error.js';

export interface ExportClientOptions {
  /** `REPORT_BASE_URL`; may carry a path of its own. */
  readonly baseUrl: URL;
  /** `REPORT_TENANT_ID`, sent as `X-CLIENT-ID`. */
  readonly tenantId: string;
  readonly tokens: TokenSource;
  /** The keep-alive pool; the client does not own it. */
  readonly dispatcher: Dispatcher;
  /** Largest body accepted. */
  readonly maxDownloadBytes: number;
  /** Bodies up to this size stay in memory. */
  readonly spoolMemoryBytes: number;
  /**
   * Where larger bodies are spooled: the process's directory, swept of killed processes' leftovers
   * at start; the client does not own it. @defaultValue a directory of each body's own under os.tmpdir()
   */
  readonly spool?: SpoolDirectory;
  /**
   * Downloads at once (`concurrency`): a further one waits for one of them to end (see
   * {@link DownloadSlots}). A download the service answered 429 keeps its slot for the Retry-After,
   * at most `maxRetryAfterMs` (`retry.maxRetryAfterMs`), so the download waiting for it waits that
   * out rather than asking at once. @defaultValue no limit
   */
  readonly downloads?: { readonly atOnce: number; readonly maxRetryAfterMs: number };
  /** Admits each request at the configured rate; none means no limit. */
  readonly gate?: RequestGate;
  /**
   * `http.bodyTimeoutMs`: a body must deliver at least 16 KiB in every such window, or the
   * transfer is given up (`EXPORT_TIMEOUT`, retried); none means no such check.
   */
  readonly bodyTimeoutMs?: number;
  /**
   * A shutdown: a request waiting for its answer, or a body still downloading, ends at once with
   * `INTERRUPTED` (nothing written, the slice left as it was) instead of holding the process up.
   */
  readonly signal?: AbortSignal;
  /** Told how each request went: its status (undefined when no answer came) and the seconds to its headers. */
  readonly onAnswer?: (status: number | undefined, seconds: number) => void;
}

/** What the export endpoint gave for a slice. */
export type ExportDownload =
  /** 200 with an empty body: the service has no data for the slice. */
  | { readonly kind: 'no_data' }
  /** 200 with a body; the caller must `dispose()` it. */
  | {
      readonly kind: 'file';
      readonly body: SpooledBody;
      /** From Content-Disposition, when given. */
      readonly fileName: string | null;
      readonly contentType: string | undefined;
    };

/**
 * The export endpoint: builds the request exactly as the spec gives it, renews the token once on
 * a 401, classifies every other answer, and spools the body (bounded by `maxDownloadBytes`).
 */
export class ExportClient {
  readonly #options: ExportClientOptions;
  /**
   * `…/portfolio/` under the base URL, as text, when the base has no query or fragment: every
   * export URL then is this text plus the slice's part, parsed once (joining and then setting each
   * query parameter parsed and serialised the URL five times per slice).
   */
  readonly #portfolioPrefix: string | undefined;
  readonly #slots: DownloadSlots | undefined;

  constructor(options: ExportClientOptions) {
    this.#options = options;
    this.#slots = options.downloads && new DownloadSlots(options.downloads.atOnce, { signal: options.signal });
    const prefix = joinUrl(options.baseUrl, PORTFOLIO_PATH);
    this.#portfolioPrefix = prefix.search === '' && prefix.hash === '' ? prefix.href : undefined;
  }

  /** The export URL of a slice. */
  urlFor(slice: Slice, format: ExportFormat): URL {
    const portfolio = encodeURIComponent(String(slice.portfolioId));
    if (this.#portfolioPrefix !== undefined) {
      const query = new URLSearchParams({ reportType: slice.reportType, date: slice.reportDate, format });
      return new URL(`${this.#portfolioPrefix}${portfolio}/export?${query}`);
    }
    const url = joinUrl(this.#options.baseUrl, `${PORTFOLIO_PATH}${portfolio}/export`);
    url.searchParams.set('reportType', slice.reportType);
    url.searchParams.set('date', slice.reportDate);
    url.searchParams.set('format', format);
    return url;
  }

  /** The slice's export, once a download slot is free; the slot is held until the body is all in. */
  async download(slice: Slice, format: ExportFormat): Promise<ExportDownload> {
    const { signal } = this.#options;
    const slots = this.#slots;
    if (slots === undefined) return this.#download(slice, format);
    const release = await slots.acquire().catch((error: unknown) => {
      throw transferError(error, slice, signal);
    });
    let keepMs = 0;
    try {
      return await this.#download(slice, format);
    } catch (error) {
      if (error instanceof SyncError && error.code === 'EXPORT_RATE_LIMITED' && error.retryAfterMs !== undefined) {
        keepMs = Math.min(error.retryAfterMs, this.#options.downloads?.maxRetryAfterMs ?? 0);
      }
      throw error;
    } finally {
      // A timer of its own: the slot's wait must not hold up a process that is done.
      if (keepMs > 0) setTimeout(release, keepMs).unref();
      else release();
    }
  }

  async #download(slice: Slice, format: ExportFormat): Promise<ExportDownload> {
    const { tokens } = this.#options;
    const url = this.urlFor(slice, format);
    let { token, response } = await this.#send(url, slice, () => tokens.getToken());
    // A 401 is the token source's to judge: a token past its lifetime or already replaced is
    // renewed, and the request retried; a fresh one is handed back, which no new token would cure.
    for (let renewals = 0; response.statusCode === 401; renewals += 1) {
      await readSmallBody(response.body);
      if (renewals === MAX_RENEWALS) throw freshTokenRefused(slice);
      const renewed = await tokens.renewAfterRejection(token);
      if (renewed === token) throw freshTokenRefused(slice);
      ({ token, response } = await this.#send(url, slice, async () => renewed));
    }

    if (response.statusCode !== 200) {
      const text = await readSmallBody(this.#bodyOf(response, slice), 2048);
      // Error pages echo the request (its Authorization header) and redirects may carry the token.
      // The body is cut before it is shortened (so no half token survives), the message after
      // (it quotes the Location header too).
      const error = classifyExportStatus(response.statusCode, response.headers, redactSecrets(text, [token]), slice);
      error.message = redactSecrets(error.message, [token]);
      throw error;
    }

    const declared = Number(response.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.#options.maxDownloadBytes) {
      response.body.destroy();
      throw new ExportError(
        'EXPORT_TOO_LARGE',
        `the export for ${describeSlice(slice)} announces ${declared} bytes, over limits.maxDownloadBytes (${this.#options.maxDownloadBytes}); raise that setting if the file is genuine`,
      );
    }

    let body: SpooledBody;
    try {
      const encoding = headerText(response.headers['content-encoding']);
      body = await SpooledBody.from(decodeContentEncoding(this.#bodyOf(response, slice), encoding, `the export for ${describeSlice(slice)}`), {
        memoryLimit: this.#options.spoolMemoryBytes,
        maxBytes: this.#options.maxDownloadBytes,
        spool: this.#options.spool,
      });
    } catch (error) {
      response.body.destroy();
      throw transferError(error, slice, this.#options.signal);
    }
    if (body.bytes === 0) {
      await body.dispose();
      if (!isFramed(response.headers)) {
        // A body with neither Content-Length nor chunked framing ends when the connection closes: a
        // gateway or proxy dying right after the headers looks exactly like this, and is no answer.
        throw new ExportError(
          'EXPORT_NETWORK',
          `the export for ${describeSlice(slice)} answered 200 and closed the connection before sending any byte, with neither Content-Length nor chunked framing: a broken transfer, not an empty report; it is retried`,
        );
      }
      return { kind: 'no_data' };
    }
    return {
      kind: 'file',
      body,
      fileName: fileNameOf(response.headers['content-disposition']),
      contentType: headerText(response.headers['content-type']),
    };
  }

  /** The response body, given up if it trickles (see {@link ExportClientOptions.bodyTimeoutMs}). */
  #bodyOf(response: Dispatcher.ResponseData, slice: Slice): AsyncIterable<Buffer> {
    const windowMs = this.#options.bodyTimeoutMs;
    if (windowMs === undefined) return response.body;
    return guardBodyProgress(
      response.body,
      windowMs,
      () => new ExportError('EXPORT_TIMEOUT', `export for ${describeSlice(slice)} arrived too slowly (less than 16 KiB in http.bodyTimeoutMs, ${windowMs} ms); it is retried`),
    );
  }

  /** Sends one request, with the token `tokenOf` gives once the gate admits it (a wait at the gate must not age the token). */
  async #send(url: URL, slice: Slice, tokenOf: () => Promise<string>): Promise<{ token: string; response: Dispatcher.ResponseData }> {
    const permit = await this.#options.gate?.acquire();
    try {
      let token = await tokenOf();
      // Admitted again after a long wait for the token: the token is taken again, as fresh as the admission.
      while ((await permit?.sending()) === true) token = await tokenOf();
      const startedAt = performance.now();
      try {
        const response = await request(url, {
          dispatcher: this.#options.dispatcher,
          method: 'GET',
          headers: { authorization: `Bearer ${token}`, 'x-client-id': this.#options.tenantId },
          signal: this.#options.signal,
        });
        this.#options.onAnswer?.(response.statusCode, (performance.now() - startedAt) / 1000);
        return { token, response };
      } catch (error) {
        this.#options.onAnswer?.(undefined, (performance.now() - startedAt) / 1000);
        throw tlsVerificationError(error, url) ?? transferError(error, slice, this.#options.signal);
      }
    } finally {
      await permit?.answered();
    }
  }
}

/** The export endpoint's path up to the portfolio id, as the spec gives it. */
const PORTFOLIO_PATH = 'api/v1/report-service/report/generate/portfolio/';

/**
 * Renewals a download asks for on 401s: one, and a second when the token it was given had been
 * renewed by another caller, not for this 401 (a token a 401 asked for is judged by its own 401).
 */
const MAX_RENEWALS = 2;

/**
 * A token the identity provider issued moments ago because of a 401, within its stated lifetime,
 * refused all the same: the credentials work, so the tenant, the client or the account's
 * permissions do not; no new token changes that.
 */
function freshTokenRefused(slice: Slice): ExportError {
  return new ExportError(
    'EXPORT_UNAUTHORIZED',
    // What to check comes first: the readiness line and the alert show the start of it.
    `export endpoint answered 401 to a token issued moments ago, within its stated lifetime (${describeSlice(slice)}): check REPORT_TENANT_ID (sent as X-CLIENT-ID), ` +
      'that REPORT_CLIENT_ID is the client issued for that tenant, and that the account in REPORT_USERNAME has permission to use the report service ' +
      '(ask the account manager); the credentials themselves work',
    { status: 401 },
  );
}

/** Turns a failed request or a broken body into a classified error. */
function transferError(error: unknown, slice: Slice, signal: AbortSignal | undefined): SyncError {
  if (signal?.aborted) {
    return new SyncError('INTERRUPTED', `the download of ${describeSlice(slice)} was stopped by the shutdown; the slice is left as it was`, { cause: error });
  }
  if (error instanceof SyncError) return error;
  const code = String((error as { code?: unknown }).code ?? '');
  const message = (error as Error).message;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new ExportError('EXPORT_TIMEOUT', `export for ${describeSlice(slice)} timed out (${code}); it is retried`, { cause: error });
  }
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') {
    return new ExportError('EXPORT_NETWORK', `export for ${describeSlice(slice)} broke off: its body did not match its Content-Length (${code}); it is retried`, {
      cause: error,
    });
  }
  if (NETWORK_ERROR_CODES.has(code) || /other side closed|premature close|aborted/i.test(message)) {
    return new ExportError('EXPORT_NETWORK', `export for ${describeSlice(slice)} broke off (${code || message}); it is retried`, {
      cause: error,
    });
  }
  return new ExportError('EXPORT_NETWORK', `export for ${describeSlice(slice)} failed: ${message}`, { cause: error });
}

/**
 * Whether the answer said where its body ends (Content-Length, or chunked with its last chunk), so
 * that an empty body is one the service meant to send.
 */
function isFramed(headers: Dispatcher.ResponseData['headers']): boolean {
  return headers['content-length'] !== undefined || /\bchunked\b/i.test(headerText(headers['transfer-encoding']) ?? '');
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The file name of Content-Disposition, with any control characters escaped (`\x1b`, `\x0a`):
 * it is shown in summaries and kept in the ledger, where a name holding an escape sequence or a
 * line break must not act on a terminal or forge a line.
 */
function fileNameOf(header: string | string[] | undefined): string | null {
  const name = rawFileNameOf(header);
  return name === null ? null : escapeControlCharacters(name);
}

function rawFileNameOf(header: string | string[] | undefined): string | null {
  const value = headerText(header);
  if (!value) return null;
  try {
    const name = contentDisposition.parse(value).parameters.filename;
    return typeof name === 'string' && name !== '' ? name : null;
  } catch {
    // A malformed header still often carries a usable name.
    const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(value);
    return match ? decodeURIComponentSafe(match[1]!) : null;
  }
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
