import { STATUS_CODES } from 'node:http';
import { request, type Dispatcher } from 'undici';
import type { PasswordGrantCredentials } from '../config/upstream-config.js';
import { AuthError, ConfigError, NETWORK_ERROR_CODES, SyncError } from '../errors/sync-error.js';
import { parseRetryAfter } from '../http/parse-retry-after.js';
import { readSmallBody } from '../http/read-small-body.js';
import { tlsVerificationError } from '../http/tls-verification-error.js';
import { printableText } from '../text/printable-text.js';
import { redactSecrets } from '../redaction/redact.js';
import { TokenLifetimeBounds } from './token-lifetime-bounds.js';
import type { IssuedToken } from './token-source.js';

export interface PasswordGrantOptions {
  readonly dispatcher: Dispatcher;
  readonly tokenUrl: URL;
  readonly credentials: PasswordGrantCredentials;
  /**
   * `token.requestTimeoutMs`: the whole request (connecting, the answer's headers and all of its
   * body) must be done within this, or it fails as `AUTH_UNAVAILABLE`. @defaultValue 30000
   */
  readonly timeoutMs?: number;
  /** A shutdown: the request ends at once with `INTERRUPTED`. */
  readonly signal?: AbortSignal;
  /** How `expires_in` is read and bounded. @defaultValue 1 s to a day, nothing reported */
  readonly lifetime?: TokenLifetimeBounds;
}

/** What to check for each OAuth error the token endpoint may name (RFC 6749 §5.2). */
const OAUTH_ERROR_HINTS: Record<string, string> = {
  invalid_grant: 'check REPORT_USERNAME and REPORT_PASSWORD',
  invalid_client: 'check REPORT_CLIENT_ID and REPORT_CLIENT_SECRET',
  unauthorized_client: 'the client is not allowed the password grant; ask the account manager',
  unsupported_grant_type: 'the identity provider does not offer the password grant for this client',
  invalid_request: 'check REPORT_CLIENT_ID, REPORT_USERNAME and the token URL',
  invalid_scope: 'the client has no access to the requested scope',
};

/**
 * Asks the identity provider for a token with the OAuth 2.0 password grant, exactly as the spec
 * gives it. Refused credentials become `AUTH_REJECTED` (final: the run stops), an unreachable or
 * failing provider `AUTH_UNAVAILABLE` (waited for: see issueThroughOutage). Messages never include the credentials.
 */
export async function requestPasswordGrant(options: PasswordGrantOptions): Promise<IssuedToken> {
  const { credentials, tokenUrl } = options;
  const form = new URLSearchParams({
    client_id: credentials.clientId,
    client_secret: credentials.clientSecret,
    grant_type: 'password',
    username: credentials.username,
    password: credentials.password,
  });
  // undici's connect, headers and body timeouts each restart with every byte: an endpoint trickling
  // its answer satisfies them all forever. Only a deadline on the whole exchange bounds it.
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const cutShort = (cause?: unknown): SyncError | undefined => {
    if (options.signal?.aborted) {
      return new SyncError('INTERRUPTED', 'stopped while asking the identity provider for a token; the slice is left as it was', { cause });
    }
    if (deadline.aborted) {
      return new AuthError(
        'AUTH_UNAVAILABLE',
        `identity provider at ${tokenUrl.origin} did not finish answering within token.requestTimeoutMs (${Math.round(timeoutMs / 100) / 10} s)`,
        { cause },
      );
    }
    return undefined;
  };
  let response: Dispatcher.ResponseData;
  try {
    response = await request(tokenUrl, {
      dispatcher: options.dispatcher,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      signal,
    });
  } catch (error) {
    const stopped = cutShort(error);
    if (stopped) throw stopped;
    const untrusted = tlsVerificationError(error, tokenUrl);
    if (untrusted) throw untrusted;
    const code = String((error as { code?: unknown }).code ?? '');
    const kind = NETWORK_ERROR_CODES.has(code) ? code : printableText(String((error as Error).message), 200);
    throw new AuthError('AUTH_UNAVAILABLE', `identity provider at ${tokenUrl.origin} cannot be reached (${kind})`, {
      cause: error,
    });
  }

  const text = await readSmallBody(response.body, 64 * 1024);
  // readSmallBody keeps what arrived before an abort: that is no answer.
  const stopped = cutShort();
  if (stopped) throw stopped;
  const status = response.statusCode;
  if (status === 200) return readIssuedToken(text, tokenUrl, options.lifetime ?? new TokenLifetimeBounds());

  if (status >= 300 && status < 400) {
    // Never followed: the form carries the credentials, and the address is configuration to fix.
    const statusText = printableText(response.statusText || STATUS_CODES[status] || '', 60);
    const location = headerText(response.headers.location);
    const target = location === undefined ? 'without a Location' : `to ${printableText(resolvedLocation(location, tokenUrl))}`;
    throw new ConfigError(
      `token endpoint ${tokenUrl.href} answered ${status}${statusText ? ` ${statusText}` : ''} ${target}: set REPORT_AUTH_URL/REPORT_TOKEN_URL to the new address`,
    );
  }

  if (status === 429 || status >= 500) {
    throw new AuthError('AUTH_UNAVAILABLE', `identity provider at ${tokenUrl.origin} answered ${status}`, {
      retryAfterMs: parseRetryAfter(response.headers['retry-after']),
    });
  }
  if (status === 404 || status === 405) {
    throw new AuthError('AUTH_REJECTED', `token endpoint ${tokenUrl.href} answered ${status}: check REPORT_AUTH_URL and REPORT_REALM (or REPORT_TOKEN_URL)`);
  }
  // Some providers quote the submitted form back in their error: cut the credentials out before quoting it.
  const { error, description } = readOAuthError(redactSecrets(text, [credentials.clientSecret, credentials.password, credentials.username]));
  const hint =
    (error && Object.hasOwn(OAUTH_ERROR_HINTS, error) ? OAUTH_ERROR_HINTS[error] : undefined) ?? 'check the REPORT_CLIENT_* and REPORT_USERNAME/REPORT_PASSWORD settings';
  const named = error ? `${error}${description ? ` (${description})` : ''}` : `status ${status}`;
  throw new AuthError('AUTH_REJECTED', `identity provider refused the password grant: ${named}; ${hint}`);
}

function readIssuedToken(text: string, tokenUrl: URL, lifetime: TokenLifetimeBounds): IssuedToken {
  let body: Record<string, unknown> | null;
  try {
    body = JSON.parse(text) as Record<string, unknown> | null;
  } catch {
    throw new AuthError('AUTH_UNAVAILABLE', `token endpoint ${tokenUrl.href} answered 200 without a JSON body`);
  }
  const accessToken = typeof body === 'object' && body !== null ? body.access_token : undefined;
  if (typeof accessToken !== 'string' || accessToken === '') {
    throw new AuthError('AUTH_REJECTED', `token endpoint ${tokenUrl.href} answered 200 without an access_token; check REPORT_TOKEN_URL`);
  }
  return { accessToken, expiresInSeconds: lifetime.lifetimeOf(body!.expires_in) };
}

function readOAuthError(text: string): { error?: string; description?: string } {
  try {
    const body = JSON.parse(text) as Record<string, unknown> | null;
    const error = typeof body?.error === 'string' ? printableText(body.error, 100) : undefined;
    const description = typeof body?.error_description === 'string' ? printableText(body.error_description, 200) : undefined;
    return { error, description };
  } catch {
    return {};
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A Location as the absolute address it names (a relative one is relative to the token URL). */
function resolvedLocation(location: string, tokenUrl: URL): string {
  try {
    return new URL(location, tokenUrl).href;
  } catch {
    return location;
  }
}
