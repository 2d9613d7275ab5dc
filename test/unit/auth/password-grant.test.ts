import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { requestPasswordGrant } from '../../../src/auth/password-grant.js';
import { AuthError } from '../../../src/errors.js';
import { startHttpServer } from '../../helpers/http-server.js';

const credentials = { clientId: 'cid', clientSecret: 'csecret-xyz', username: 'alice', password: 'pw-xyz' };

describe('requestPasswordGrant', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function grantAgainst(handler: Parameters<typeof startHttpServer>[0]) {
    const server = await startHttpServer(handler);
    const agent = new Agent();
    cleanups.push(() => agent.close(), () => server.close());
    return requestPasswordGrant({ dispatcher: agent, tokenUrl: new URL(`${server.url}/auth/realms/r/protocol/openid-connect/token`), credentials });
  }

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
