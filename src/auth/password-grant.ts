import { request, type Dispatcher } from 'undici';
import type { PasswordGrantCredentials } from '../config/upstream-config.js';
import { AuthError, NETWORK_ERROR_CODES } from '../errors.js';
import { parseRetryAfter } from '../gateway/parse-retry-after.js';
import { readSmallBody } from '../gateway/read-small-body.js';
import { tlsVerificationError } from '../gateway/tls-verification-error.js';
import { redactSecrets } from '../redact-secrets.js';
import type { IssuedToken } from './token-source.js';

export interface PasswordGrantOptions {
  readonly dispatcher: Dispatcher;
  readonly tokenUrl: URL;
  readonly credentials: PasswordGrantCredentials;
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
  let response: Dispatcher.ResponseData;
  try {
    response = await request(tokenUrl, {
      dispatcher: options.dispatcher,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
    });
  } catch (error) {
    const untrusted = tlsVerificationError(error, tokenUrl);
    if (untrusted) throw untrusted;
    const code = String((error as { code?: unknown }).code ?? '');
    const kind = NETWORK_ERROR_CODES.has(code) ? code : (error as Error).message;
    throw new AuthError('AUTH_UNAVAILABLE', `identity provider at ${tokenUrl.origin} cannot be reached (${kind})`, {
      cause: error,
    });
  }

  const text = await readSmallBody(response.body, 64 * 1024);
  const status = response.statusCode;
  if (status === 200) return readIssuedToken(text, tokenUrl);

  if (status === 429 || status >= 500) {
    throw new AuthError('AUTH_UNAVAILABLE', `identity provider at ${tokenUrl.origin} answered ${status}`, {
      retryAfterMs: parseRetryAfter(response.headers['retry-after']),
    });
  }
  if (status === 404 || status === 405) {
    throw new AuthError(
      'AUTH_REJECTED',
      `token endpoint ${tokenUrl.href} answered ${status}: check REPORT_AUTH_URL and REPORT_REALM (or REPORT_TOKEN_URL)`,
    );
  }
  // Some providers quote the submitted form back in their error: cut the credentials out before quoting it.
  const { error, description } = readOAuthError(redactSecrets(text, [credentials.clientSecret, credentials.password, credentials.username]));
  const hint = (error && OAUTH_ERROR_HINTS[error]) ?? 'check the REPORT_CLIENT_* and REPORT_USERNAME/REPORT_PASSWORD settings';
  const named = error ? `${error}${description ? ` (${description})` : ''}` : `status ${status}`;
  throw new AuthError('AUTH_REJECTED', `identity provider refused the password grant: ${named}; ${hint}`);
}

function readIssuedToken(text: string, tokenUrl: URL): IssuedToken {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new AuthError('AUTH_UNAVAILABLE', `token endpoint ${tokenUrl.href} answered 200 without a JSON body`);
  }
  const accessToken = body.access_token;
  const expiresIn = Number(body.expires_in);
  if (typeof accessToken !== 'string' || accessToken === '') {
    throw new AuthError('AUTH_REJECTED', `token endpoint ${tokenUrl.href} answered 200 without an access_token; check REPORT_TOKEN_URL`);
  }
  if (!Number.isFinite(expiresIn) || expiresIn <= 0) {
    throw new AuthError('AUTH_REJECTED', `token endpoint ${tokenUrl.href} answered without a usable expires_in`);
  }
  return { accessToken, expiresInSeconds: expiresIn };
}

function readOAuthError(text: string): { error?: string; description?: string } {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const error = typeof body.error === 'string' ? body.error.slice(0, 100) : undefined;
    const description = typeof body.error_description === 'string' ? body.error_description.slice(0, 200) : undefined;
    return { error, description };
  } catch {
    return {};
  }
}
