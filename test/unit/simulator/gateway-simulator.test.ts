import { request } from 'undici';
import unzipper from 'unzipper';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGatewaySimulator, type GatewaySimulator } from '../../../src/simulator/gateway-simulator.js';

const MONDAY = '2024-03-04';

describe('gateway simulator', () => {
  let sim: GatewaySimulator;
  beforeEach(async () => {
    sim = await createGatewaySimulator({ portfolioIds: [1, 2] });
  });
  afterEach(async () => {
    await sim.close();
  });

  const tokenUrl = () => `${sim.authUrl}/realms/${sim.realm}/protocol/openid-connect/token`;

  async function grant(overrides: Record<string, string> = {}, contentType = 'application/x-www-form-urlencoded') {
    const c = sim.credentials;
    const form = new URLSearchParams({ client_id: c.clientId, client_secret: c.clientSecret, grant_type: 'password', username: c.username, password: c.password, ...overrides });
    const response = await request(tokenUrl(), { method: 'POST', headers: { 'content-type': contentType }, body: form.toString() });
    return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
  }

  async function exportOf(query: string, headers: Record<string, string> = {}, portfolio = '1') {
    const response = await request(`${sim.url}/api/v1/report-service/report/generate/portfolio/${portfolio}/export?${query}`, { headers });
    return { status: response.statusCode, headers: response.headers, body: Buffer.from(await response.body.arrayBuffer()) };
  }

  async function authorised() {
    const { body } = await grant();
    return { authorization: `Bearer ${String(body.access_token)}`, 'x-client-id': sim.credentials.tenantId };
  }

  it('issues a token for the right password grant, with the configured lifetime', async () => {
    const { status, body } = await grant();
    expect(status).toBe(200);
    expect(body).toMatchObject({ expires_in: 300, token_type: 'Bearer' });
    expect(typeof body.access_token).toBe('string');
    expect(typeof body.refresh_token).toBe('string');
  });

  it.each([
    [{ client_secret: 'wrong' }, 401, 'invalid_client'],
    [{ password: 'wrong' }, 401, 'invalid_grant'],
    [{ grant_type: 'client_credentials' }, 400, 'unsupported_grant_type'],
    [{ username: '' }, 400, 'invalid_request'],
  ])('refuses %j with %i %s', async (overrides, status, error) => {
    const result = await grant(overrides);
    expect(result.status).toBe(status);
    expect(result.body.error).toBe(error);
  });

  it('refuses a form sent as JSON, and answers 404 for another realm', async () => {
    expect((await grant({}, 'application/json')).status).toBe(400);
    const response = await request(`${sim.authUrl}/realms/other/protocol/openid-connect/token`, { method: 'POST', body: '' });
    expect(response.statusCode).toBe(404);
    await response.body.dump();
  });

  it('checks the bearer token, the tenant, the parameters and the portfolio, in that order', async () => {
    const headers = await authorised();
    const query = `reportType=index&date=${MONDAY}`;
    expect((await exportOf(query)).status).toBe(401);
    expect((await exportOf(query, { ...headers, authorization: 'Bearer unknown' })).status).toBe(401);
    expect((await exportOf(query, { ...headers, 'x-client-id': 'other' })).status).toBe(403);
    expect((await exportOf(`reportType=indexx&date=${MONDAY}`, headers)).status).toBe(400);
    expect((await exportOf(`date=${MONDAY}`, headers)).status).toBe(400);
    expect((await exportOf('reportType=index&date=2024-02-30', headers)).status).toBe(400);
    expect((await exportOf(`${query}&format=xml`, headers)).status).toBe(400);
    expect((await exportOf(query, headers, 'abc')).status).toBe(400);
    expect((await exportOf(query, headers, '3')).status).toBe(404);
    expect((await exportOf(query, headers)).status).toBe(200);
    expect(sim.counters).toMatchObject({ tokenRequests: 1, exportRequests: 10 });
  });

  it('expires tokens after their lifetime and forgets revoked ones', async () => {
    sim.setTokenLifetime(0.2);
    const headers = await authorised();
    const query = `reportType=index&date=${MONDAY}`;
    expect((await exportOf(query, headers)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect((await exportOf(query, headers)).status).toBe(401);
    sim.setTokenLifetime(300);
    const fresh = await authorised();
    sim.revokeTokens();
    expect((await exportOf(query, fresh)).status).toBe(401);
  });

  it('serves JSON arrays with raw decimal literals, named as the spec examples', async () => {
    const result = await exportOf(`reportType=index&date=${MONDAY}`, await authorised());
    expect(result.headers['content-type']).toBe('application/json');
    expect(result.headers['content-disposition']).toBe(`attachment; filename="${MONDAY}_Global_Equity_1_Index_index.json"`);
    const text = result.body.toString('utf8');
    expect(text).toMatch(/"indexValue":\d+\.\d{17}\b/);
    const records = JSON.parse(text) as Record<string, unknown>[];
    expect(records).toHaveLength(3);
    expect(Object.keys(records[0]!).slice(0, 9)).toEqual([
      'effectiveDate',
      'indexId',
      'indexName',
      'indexValue',
      'currency',
      'closeMarketValue',
      'openMarketValue',
      'closeDivisor',
      'openDivisor',
    ]);
    expect(Object.keys(records[0]!).length).toBeGreaterThan(9);
  });

  it('serves a ZIP with one CSV entry written with a data descriptor, BOM and CRLF', async () => {
    const result = await exportOf(`reportType=constituent.close&date=${MONDAY}&format=csv`, await authorised());
    expect(result.headers['content-type']).toBe('application/zip');
    expect(result.headers['content-disposition']).toMatch(/filename="2024-03-04_Global_Equity_1_Index_index\.zip"/);
    expect(result.body.readUInt32LE(0)).toBe(0x04034b50);
    expect(result.body.readUInt16LE(6) & 0x08).toBe(0x08);
    const directory = await unzipper.Open.buffer(result.body);
    expect(directory.files).toHaveLength(1);
    const csv = (await directory.files[0]!.buffer()).toString('utf8');
    expect(csv.startsWith('\uFEFFEffective Date,ISIN,Security Name,Security Ticker,Exchange Code,Closing Price,Currency,Closing Fx,Index Shares,Index Weighting\r\n')).toBe(true);
    expect(csv).toContain('"Globex, Inc."');
    expect(csv).toContain('"Initech ""Classic"" Shares"');
    expect(csv).toContain('"Umbrella Holdings\nClass B"');
  });

  it('answers weekends with an empty body', async () => {
    const result = await exportOf('reportType=constituent.close&date=2024-03-09&format=csv', await authorised());
    expect(result.status).toBe(200);
    expect(result.body.length).toBe(0);
  });

  it('is deterministic, and a restatement changes the answer', async () => {
    const headers = await authorised();
    const query = `reportType=constituent.open&date=${MONDAY}&format=csv`;
    const first = await exportOf(query, headers);
    const second = await exportOf(query, headers);
    expect(second.body.equals(first.body)).toBe(true);
    sim.restate(1, 'constituent.open', MONDAY);
    const third = await exportOf(query, headers);
    expect(third.body.equals(first.body)).toBe(false);
  });

  it('plays scripted steps in order, then answers normally', async () => {
    const headers = await authorised();
    sim.script(1, 'index', MONDAY, [{ status: 503, headers: { 'Retry-After': '2' } }, { fault: 'reset' }, { status: 200, body: 'oops', headers: { 'Content-Type': 'text/html' } }]);
    const query = `reportType=index&date=${MONDAY}`;
    const unavailable = await exportOf(query, headers);
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers['retry-after']).toBe('2');
    await expect(exportOf(query, headers)).rejects.toThrow();
    expect((await exportOf(query, headers)).body.toString()).toBe('oops');
    expect((await exportOf(query, headers)).headers['content-type']).toBe('application/json');
    expect(sim.counters.byStatus).toMatchObject({ 503: 1, 0: 1, 200: 2 });
  });

  it('truncates bodies on request, short of their Content-Length', async () => {
    const headers = await authorised();
    sim.script(1, 'index', MONDAY, [{ fault: 'truncate' }]);
    await expect(exportOf(`reportType=index&date=${MONDAY}`, headers)).rejects.toThrow();
  });
});
