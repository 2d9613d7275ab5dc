import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { requestPasswordGrant } from '../../../src/auth/password-grant.js';
import { AuthError, SyncError } from '../../../src/errors/sync-error.js';
import { startHttpServer } from '../../helpers/http-server.js';

const credentials = { clientId: 'cid', clientSecret: 'csecret-xyz', username: 'alice', password: 'pw-xyz' };

describe('requestPasswordGrant', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function grantAgainst(handler: Parameters<typeof startHttpServer>[0], extra: Partial<Parameters<typeof requestPasswordGrant>[0]> = {}) {
    const server = await startHttpServer(handler);
    const agent = new Agent();
    cleanups.push(
      () => agent.close(),
      () => server.close(),
    );
    return requestPasswordGrant({ dispatcher: agent, tokenUrl: new URL(`${server.url}/auth/realms/r/protocol/openid-connect/token`), credentials, ...extra });
  }

  /** Answers 200 at once, then one byte of the body every 100 ms, never finishing. */
  const trickle: Parameters<typeof startHttpServer>[0] = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    const timer = setInterval(() => res.write(' '), 100);
    res.on('close', () => clearInterval(timer));
  };

  it('gives up on an answer that trickles past token.requestTimeoutMs: AUTH_UNAVAILABLE, which the outage wait counts', async () => {
    const startedAt = Date.now();
    const error = (await grantAgainst(trickle, { timeoutMs: 500 }).catch((e: unknown) => e)) as AuthError;
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(450);
    expect(Date.now() - startedAt).toBeLessThan(1_500);
    expect(error.code).toBe('AUTH_UNAVAILABLE');
    expect(error.message).toMatch(/^identity provider at http:\/\/127\.0\.0\.1:\d+ did not finish answering within token\.requestTimeoutMs \(0\.5 s\)$/);
  });

  it('gives up on headers that never come the same way', async () => {
    const error = (await grantAgainst(() => undefined, { timeoutMs: 300 }).catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_UNAVAILABLE');
    expect(error.message).toContain('token.requestTimeoutMs (0.3 s)');
  });

  it('ends at once with INTERRUPTED on a shutdown, mid-answer', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const startedAt = Date.now();
    const error = (await grantAgainst(trickle, { timeoutMs: 60_000, signal: controller.signal }).catch((e: unknown) => e)) as SyncError;
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    expect(error).toBeInstanceOf(SyncError);
    expect(error.code).toBe('INTERRUPTED');
  });

  it.each([
    [308, 'Permanent Redirect'],
    [301, 'Moved Permanently'],
    [302, 'Found'],
  ])('names a %d as a redirect to put in the settings, without following it (exit 2)', async (status, text) => {
    let requests = 0;
    const error = (await grantAgainst((_req, res) => {
      requests += 1;
      res.writeHead(status, { location: '/auth/realms/moved/protocol/openid-connect/token' }).end();
    }).catch((e: unknown) => e)) as SyncError;
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.fatal).toBe(true);
    expect(error.message).toMatch(
      new RegExp(
        `^token endpoint http://127\\.0\\.0\\.1:(\\d+)/auth/realms/r/protocol/openid-connect/token answered ${status} ${text} to http://127\\.0\\.0\\.1:\\1/auth/realms/moved/protocol/openid-connect/token: set REPORT_AUTH_URL/REPORT_TOKEN_URL to the new address$`,
      ),
    );
    expect(requests).toBe(1);
  });

  it('escapes the upstream text it quotes: OAuth error, description and status text', async () => {
    const error = (await grantAgainst((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_grant\u001b[31m', error_description: `line one\r\nFORGED line\u009b2J${'x'.repeat(500)}` }));
    }).catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_REJECTED');
    expect(error.message).toContain('invalid_grant\\x1b[31m (line one\\x0d\\x0aFORGED line\\x9b2J');
    expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(error.message.length).toBeLessThan(450);
  });

  it('does not take an OAuth error named like a built-in property for a known one', async () => {
    const error = (await grantAgainst((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"constructor"}');
    }).catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_REJECTED');
    expect(error.message).toContain('refused the password grant: constructor;');
    expect(error.message).toContain('REPORT_USERNAME/REPORT_PASSWORD');
  });

  it.each([
    ['"300"', 300],
    ['"abc"', 300],
    ['0.001', 1],
    ['1e300', 86_400],
    ['null', 300],
  ])('reads expires_in %s as %d s instead of refusing a working token', async (expiresIn, seconds) => {
    const token = await grantAgainst((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(`{"access_token":"abc","expires_in":${expiresIn}}`);
    });
    expect(token).toEqual({ accessToken: 'abc', expiresInSeconds: seconds });
  });

  it('refuses a 200 whose JSON is not an object as having no access_token', async () => {
    const error = (await grantAgainst((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('null');
    }).catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_REJECTED');
    expect(error.message).toContain('without an access_token');
  });

  it('posts the form the spec gives and reads the token', async () => {
    let form: URLSearchParams | undefined;
    let contentType: string | undefined;
    let path: string | undefined;
    const token = await grantAgainst((req, res, body) => {
      form = new URLSearchParams(body);
      contentType = req.headers['content-type'];
      path = req.url;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 'abc', expires_in: 120, refresh_token: 'r', token_type: 'Bearer' }));
    });
    expect(token).toEqual({ accessToken: 'abc', expiresInSeconds: 120 });
    expect(path).toBe('/auth/realms/r/protocol/openid-connect/token');
    expect(contentType).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(form!)).toEqual({
      client_id: 'cid',
      client_secret: 'csecret-xyz',
      grant_type: 'password',
      username: 'alice',
      password: 'pw-xyz',
    });
  });

  it('names the OAuth error and what to check, without the credentials', async () => {
    const error = (await grantAgainst((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'Invalid user credentials' }));
    }).catch((e: unknown) => e)) as AuthError;
    expect(error).toBeInstanceOf(AuthError);
    expect(error.code).toBe('AUTH_REJECTED');
    expect(error.fatal).toBe(true);
    expect(error.message).toContain('invalid_grant (Invalid user credentials)');
    expect(error.message).toContain('REPORT_PASSWORD');
    expect(error.message).not.toMatch(/pw-xyz|csecret-xyz/);
  });

  it('treats a 400 invalid_client as refused credentials', async () => {
    const error = (await grantAgainst((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
    }).catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_REJECTED');
    expect(error.message).toContain('REPORT_CLIENT_SECRET');
  });

  it('treats a 503 as a provider that is down for now (retryable)', async () => {
    const error = (await grantAgainst((_req, res) => {
      res.writeHead(503).end('down');
    }).catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_UNAVAILABLE');
    expect(error.retryable).toBe(true);
  });

  it('treats a wrong realm path (404) as a configuration problem', async () => {
    const error = (await grantAgainst((_req, res) => {
      res.writeHead(404).end();
    }).catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_REJECTED');
    expect(error.message).toContain('REPORT_REALM');
  });
});
