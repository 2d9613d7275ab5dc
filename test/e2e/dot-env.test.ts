import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { simulatorEnvironment, type GatewaySimulatorOptions } from '../../src/simulator/gateway-simulator.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

/*
 * The `.env` file is read as its author wrote it: a BOM and Windows line ends change nothing, and a
 * value the dotenv rules changed (a password cut at an unquoted `#`) is named by its line, never
 * shown, when the upstream refuses it.
 */

const ONE_DAY = ['run', '--from', '2024-04-01', '--to', '2024-04-01'];

describe('.env as written', () => {
  let rig: SyncRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  /** A rig whose REPORT_* variables come from `.env` only: the real environment leaves them unset. */
  async function rigWithDotEnv(simulator: GatewaySimulatorOptions, lines: (env: Record<string, string>) => string) {
    rig = await startSyncRig({ simulator });
    const fromSimulator = simulatorEnvironment(rig.simulator);
    writeFileSync(join(rig.dir, '.env'), lines(fromSimulator));
    const unset = Object.fromEntries(Object.keys(fromSimulator).map((name) => [name, undefined]));
    return (args: string[]) => rig!.cli(args, unset);
  }

  it('a .env saved with a byte-order mark and CRLF line ends loads, its first variable included', async () => {
    const cli = await rigWithDotEnv(
      {},
      (env) =>
        `\uFEFF${Object.entries(env)
          .map(([name, value]) => `${name}=${value}`)
          .join('\r\n')}\r\n`,
    );
    const result = await cli(ONE_DAY);
    expect(result.stderr).not.toContain('missing environment variables');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/loaded\s+4\n/);
  });

  it('a password cut at an unquoted # is named by its .env line when refused, and never shown', async () => {
    const cli = await rigWithDotEnv({ credentials: { password: 'pa#ss' } }, (env) =>
      ['# report-sync', ...Object.entries(env).map(([name, value]) => (name === 'REPORT_PASSWORD' ? `${name}=pa#ss` : `${name}=${value}`))].join('\n'),
    );
    const line = 2 + Object.keys(simulatorEnvironment(rig!.simulator)).indexOf('REPORT_PASSWORD');
    const result = await cli(ONE_DAY);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('invalid_grant');
    expect(result.stdout).toMatch(
      new RegExp(
        `Stopped early: .*invalid_grant.*; note: \\.env line ${line} \\(REPORT_PASSWORD\\) has a # outside quotes, which starts a comment, so the value was cut there: put the value in single quotes if the # belongs to it`,
      ),
    );
    const everything = `${result.stdout}${result.stderr}${result.logs}`;
    expect(everything).not.toContain('pa#ss');
    expect(everything).not.toContain('#ss');

    // The advice works: quoted, the same password is accepted.
    writeFileSync(
      join(rig!.dir, '.env'),
      Object.entries(simulatorEnvironment(rig!.simulator))
        .map(([name, value]) => `${name}='${value}'`)
        .join('\n'),
    );
    const quoted = await cli(ONE_DAY);
    expect(quoted.code).toBe(0);
    expect(quoted.stdout).not.toContain('.env line');
  });

  it('a tenant id cut at an unquoted # is named when the gateway refuses it (403, the run goes on)', async () => {
    const cli = await rigWithDotEnv({ credentials: { tenantId: 'acme#2' } }, (env) =>
      Object.entries(env)
        .map(([name, value]) => `${name}=${value}`)
        .join('\n'),
    );
    const line = 1 + Object.keys(simulatorEnvironment(rig!.simulator)).indexOf('REPORT_TENANT_ID');
    const result = await cli(ONE_DAY);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('EXPORT_FORBIDDEN');
    expect(result.stdout).toContain(`Note: .env line ${line} (REPORT_TENANT_ID) has a # outside quotes`);
    expect(`${result.stdout}${result.stderr}${result.logs}`).not.toContain('acme#2');
  });

  it('says nothing about .env when the refusal has another cause', async () => {
    const cli = await rigWithDotEnv({}, (env) =>
      Object.entries(env)
        .map(([name, value]) => `${name}=${name === 'REPORT_PASSWORD' ? `'wrong'` : value} # set by ops`)
        .join('\n'),
    );
    const result = await cli(ONE_DAY);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('invalid_grant');
    expect(result.stdout).not.toContain('.env line');
  });
});
