import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { makeSelfSignedCertificate, removeCertificate, startTlsFront } from '../helpers/tls-front.js';
import { CLI_BIN } from '../helpers/cli-bin.js';

/*
 * TLS certificates are verified by default. A server whose certificate cannot be verified stops
 * the run at once (exit 2) with a message that names certificate verification and both ways out,
 * without a stack trace and without retrying or waiting; `http.verifyTls: false` gets through and
 * warns; and the advice works: trusting the certificate with NODE_EXTRA_CA_CERTS gets through
 * with verification on. The certificate is self-signed, made at test time with openssl.
 */

const DAY = '2024-05-06'; // a Monday
const RUN = ['run', '--from', DAY, '--to', DAY];

describe('TLS certificate verification', () => {
  let rig: SyncRig;
  let tls: Awaited<ReturnType<typeof startTlsFront>>;
  let certificate: ReturnType<typeof makeSelfSignedCertificate>;
  let overTls: Record<string, string>;

  beforeAll(async () => {
    certificate = makeSelfSignedCertificate();
    rig = await startSyncRig({ settings: { portfolios: [1001, 1002], reportTypes: ['index'], token: { unavailableWaitMs: 60_000 } } });
    tls = await startTlsFront(rig.simulator.url, certificate);
    overTls = { REPORT_BASE_URL: tls.origin, REPORT_AUTH_URL: `${tls.origin}/auth` };
    writeFileSync(join(rig.dir, 'no-verify.json'), JSON.stringify({ http: { verifyTls: false } }));
  });
  afterAll(async () => {
    await tls?.close();
    await rig?.close();
    if (certificate) removeCertificate(certificate.dir);
  });

  function expectCertificateAdvice(text: string): void {
    expect(text).toMatch(/TLS certificate verification failed for https:\/\/127\.0\.0\.1:\d+ \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN): /);
    expect(text).toContain('NODE_EXTRA_CA_CERTS=');
    expect(text).toContain('set http.verifyTls to false');
    expect(text).not.toMatch(/^\s+at .*\(.*:\d+:\d+\)$/m); // no stack trace
  }

  it('refuses a self-signed identity provider by default: exit 2 at once, no retries, no waiting', async () => {
    rig.simulator.resetCounters();
    const connectionsBefore = tls.connections();
    const startedAt = Date.now();
    // unavailableWaitMs is a minute: were the failure taken for an outage, this would hang.
    const result = await rig.cli(RUN, overTls);
    expect(result.code).toBe(2);
    expect(Date.now() - startedAt).toBeLessThan(10_000);
    expectCertificateAdvice(result.stdout);
    expect(result.stdout).toMatch(/Stopped early: TLS certificate verification failed/);
    expect(result.logLines.find((line) => line.code === 'CONFIG_INVALID')).toBeDefined();
    // One connection (the single-flight token request), refused at the handshake; nothing got through.
    expect(tls.connections() - connectionsBefore).toBeGreaterThan(0);
    expect(tls.connections() - connectionsBefore).toBeLessThanOrEqual(2);
    expect(tls.requests()).toBe(0);
    expect(rig.simulator.counters.tokenRequests + rig.simulator.counters.exportRequests).toBe(0);
  });

  it('refuses a self-signed export endpoint: the slice fails once with the reason in the ledger, and the run stops', async () => {
    rig.simulator.resetCounters();
    const result = await rig.cli([...RUN, '--portfolios', '1001'], { REPORT_BASE_URL: tls.origin });
    expect(result.code).toBe(2);
    expectCertificateAdvice(result.stdout);
    expect(rig.simulator.counters.tokenRequests).toBe(1); // the identity provider is plain HTTP here
    expect(rig.simulator.counters.exportRequests).toBe(0);
    const warehouse = await rig.warehouse();
    const ledger = await warehouse.db.selectFrom('report_loads').selectAll().where('portfolio_id', '=', 1001).executeTakeFirstOrThrow();
    expect(ledger).toMatchObject({ status: 'failed', attempts: 1 });
    expect(ledger.error).toMatch(/^CONFIG_INVALID: TLS certificate verification failed/);
  });

  it('gets through with http.verifyTls false, and warns that certificates are not verified', async () => {
    rig.simulator.resetCounters();
    const result = await rig.cli([...RUN, '--config', 'no-verify.json'], overTls);
    expect(result.code).toBe(0);
    expect(tls.requests()).toBeGreaterThan(0);
    expect(rig.simulator.counters.exportRequests).toBe(2);
    const warning = result.logLines.find((line) => /verifyTls is false/.test(String(line.msg)));
    expect(warning).toMatchObject({ level: 40 });
    expect(String(warning?.msg)).toMatch(/NOT verified/);
  });

  it('gets through with verification on once the certificate is trusted with NODE_EXTRA_CA_CERTS', async () => {
    rig.simulator.resetCounters();
    // NODE_EXTRA_CA_CERTS is read when Node starts, so this takes a process of its own.
    const child = spawn(process.execPath, [CLI_BIN, ...RUN], {
      cwd: rig.dir,
      env: { PATH: process.env.PATH ?? '', ...rig.env, ...overTls, NODE_EXTRA_CA_CERTS: certificate.certFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, output).toBe(0);
    expect(output).not.toMatch(/verifyTls is false/);
    expect(rig.simulator.counters.exportRequests).toBe(2);
  });
});
