import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimulatorCredentials } from '../../src/simulator/gateway-simulator.js';
import { startEchoingGateway, type EchoingGateway } from '../helpers/echoing-gateway.js';
import { startQueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { TEST_POSTGRES_URL } from '../helpers/temp-warehouse.js';
import { CLI_BIN } from '../helpers/cli-bin.js';

/*
 * Credentials and tokens never reach standard output, standard error, a log line (at any level,
 * JSON or pretty) or the ledger, even when the upstream echoes them back: error pages quoting the
 * request's Authorization header, OAuth errors quoting the submitted form, HTML where JSON was due.
 * The credentials hold quotes, backslashes and URL metacharacters, so every encoding they travel
 * in (JSON-escaped, form- and URL-encoded) is checked, not just the raw text.
 */

const DAY = '2024-05-06'; // a Monday
const CREDENTIALS: Partial<SimulatorCredentials> = {
  clientSecret: 'cs-Zq8!"quoted"\\slash/&=+ 9e1f',
  password: 'pw-"P@ss"\\word/%41&x=y+z 4c2d',
  username: 'user-7f3e9b',
};
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/** Every form a secret can travel in. */
function formsOf(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  return [...new Set([secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2), json, json.replaceAll('/', '\\/')])];
}

/** Asserts that `text` holds no credential (in any encoding), no issued token and no Authorization value. */
function expectNothingSecret(text: string, what: string, tokens: readonly string[]): void {
  for (const secret of [CREDENTIALS.clientSecret!, CREDENTIALS.password!, CREDENTIALS.username!]) {
    for (const form of formsOf(secret)) expect(text, `${what} holds a credential (${form})`).not.toContain(form);
  }
  for (const token of tokens) expect(text, `${what} holds an issued token`).not.toContain(token);
  expect(text, `${what} holds a Bearer value`).not.toMatch(/Bearer(?:\s|%20|\+)+(?!\[redacted\])[^\s"'<]/i);
}

describe('secrets stay out of the output, the messages and the ledger', () => {
  let rig: SyncRig;
  let gateway: EchoingGateway;

  beforeAll(async () => {
    rig = await startSyncRig({
      simulator: { portfolioIds: [1001, 1002, 1003, 1004], credentials: CREDENTIALS },
      settings: {
        portfolios: [1001, 1002, 1003, 1004],
        reportTypes: ['index'],
        retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 },
        // The HTML "token" answer counts as the provider being unavailable: fail at once, not after minutes.
        token: { unavailableWaitMs: 0 },
      },
    });
    gateway = await startEchoingGateway(rig.simulator);
    gateway.echoExportError(1001, 400);
    gateway.echoExportError(1002, 403);
    gateway.echoExportError(1003, 500);
  });
  afterAll(async () => {
    await gateway?.close();
    await rig?.close();
  });

  async function ledgerErrors(): Promise<string> {
    const warehouse = await rig.warehouse();
    const rows = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'error']).execute();
    return rows.map((row) => `${row.portfolio_id}: ${row.error ?? ''}`).join('\n');
  }

  function run(level: string) {
    return rig.cli(['run', '--from', DAY, '--to', DAY], { ...gateway.env, LOG_LEVEL: level });
  }

  it.each(LEVELS)('at log level %s, with error pages and identity-provider answers that echo them', async (level) => {
    // Export error pages (400, 403, 500 retried) quoting the Authorization header; a 401 renewal on the side.
    gateway.setTokenMode('forward');
    rig.simulator.script(1004, 'index', DAY, [{ status: 401 }]);
    const pagesBefore = gateway.echoedPages();
    const exports = await run(level);
    expect(exports.code).toBe(1);
    expect(gateway.echoedPages() - pagesBefore).toBe(4); // 400 and 403 once, 500 twice
    const ledger = await ledgerErrors();
    // The pages were quoted, with the token cut out.
    expect(ledger).toMatch(/1001: EXPORT_BAD_REQUEST: .*\[service said: .*\[redacted\]/);
    expect(ledger).toMatch(/1002: EXPORT_FORBIDDEN: .*\[service said: .*\[redacted\]/);
    expect(ledger).toMatch(/1003: EXPORT_SERVER_ERROR: .*\[service said: .*\[redacted\]/);
    expect(ledger).toMatch(/^1004: $/m); // loaded after a 401 and a renewal

    // An OAuth error quoting the submitted password, client secret and username.
    gateway.setTokenMode('oauth-error-echo');
    rig.simulator.revokeTokens();
    const refused = await run(level);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/invalid_grant \(Invalid user credentials for \[redacted\] with password \[redacted\]/);

    // A 200 from the token endpoint that is an HTML page quoting the form.
    gateway.setTokenMode('html-200');
    const html = await run(level);
    expect(html.code).toBe(1);
    expect(html.stdout).toMatch(/AUTH_UNAVAILABLE: .*answered 200 without a JSON body/);

    const tokens = rig.simulator.issuedTokens();
    expect(tokens.length).toBeGreaterThan(0);
    for (const [name, result] of [
      ['export run', exports],
      ['refused run', refused],
      ['HTML token run', html],
    ] as const) {
      expectNothingSecret(result.stdout, `${name} stdout`, tokens);
      expectNothingSecret(result.stderr, `${name} stderr`, tokens);
      expectNothingSecret(result.logs, `${name} log`, tokens);
    }
    expectNothingSecret(await ledgerErrors(), 'ledger', tokens);
    if (level === 'trace') expect(exports.logLines.some((line) => line.code === 'EXPORT_SERVER_ERROR')).toBe(true);
  });

  it('in the pretty output of a terminal', async () => {
    gateway.setTokenMode('forward');
    // `script` gives the CLI a real pseudo-terminal, so it picks pino-pretty and the progress bar itself.
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI_BIN)} run --from ${DAY} --to ${DAY}`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: rig.dir,
      env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...rig.env, ...gateway.env, LOG_LEVEL: 'trace' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    const plain = output.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
    expect(code).toBe(1);
    expect(plain).toMatch(/\] (WARN|ERROR)/); // pretty, not JSON
    expect(plain).not.toMatch(/^\{"level"/m);
    expect(plain).toMatch(/\[service said: .*\[redacted\]/);
    expectNothingSecret(output, 'pretty output', rig.simulator.issuedTokens());
  });

  it('when a URL or DATABASE_URL carries a password', async () => {
    const tokens = rig.simulator.issuedTokens();
    const cases: [Record<string, string>, RegExp][] = [
      [{ REPORT_BASE_URL: `http://admin:${encodeURIComponent(CREDENTIALS.password!)}@127.0.0.1:9/` }, /REPORT_BASE_URL must not carry credentials/],
      [{ REPORT_TOKEN_URL: `${gateway.tokenUrl}?client_secret=${encodeURIComponent(CREDENTIALS.clientSecret!)}` }, /REPORT_TOKEN_URL must not have a query string/],
      [{ DATABASE_URL: `${TEST_POSTGRES_URL.replace('://postgres@', `://postgres:${encodeURIComponent(CREDENTIALS.password!)}@`)}/report_sync_no_such_db` }, /does not exist/],
      [{ DATABASE_URL: `${TEST_POSTGRES_URL}/report_sync_no_such_db?password=${encodeURIComponent(CREDENTIALS.password!)}` }, /does not exist/],
      [{ DATABASE_URL: `postgres://postgres:12#${CREDENTIALS.username}@127.0.0.1/report_sync_no_such_db` }, /warehouse|migration|ENOTFOUND|EAI_AGAIN/],
    ];
    for (const [env, message] of cases) {
      for (const command of [['run', '--from', DAY, '--to', DAY], ['migrate'], ['status', '--from', DAY, '--to', DAY]]) {
        const result = await rig.cli(command, { ...gateway.env, LOG_LEVEL: 'trace', ...env });
        const all = `${result.stdout}${result.stderr}${result.logs}`;
        if (command[0] === 'run' || !('REPORT_BASE_URL' in env || 'REPORT_TOKEN_URL' in env)) {
          expect(result.code, `${command[0]} with ${Object.keys(env)[0]}: ${all}`).not.toBe(0);
          expect(all).toMatch(message);
        }
        expectNothingSecret(all, `${command[0]} with ${Object.keys(env)[0]}`, tokens);
      }
    }
  });

  it('in configuration errors, with every secret set', async () => {
    const tokens = rig.simulator.issuedTokens();
    writeFileSync(join(rig.dir, 'bad-setting.json'), JSON.stringify({ retry: { attempts: 0 }, reportTypes: ['index', 'nope'] }));
    // An operator who pasted .env lines into a settings file: not JSON, and it holds the password.
    writeFileSync(join(rig.dir, 'pasted-env.json'), `{\n  "portfolios": [1001],\n  "password": ${CREDENTIALS.password}\n}\n`);
    const badSetting = await rig.cli(['run', '--config', 'bad-setting.json'], gateway.env);
    expect(badSetting.code).toBe(2);
    expect(badSetting.stderr).toMatch(/retry\.attempts \(from .*bad-setting\.json\)/);
    const pasted = await rig.cli(['run', '--config', 'pasted-env.json'], gateway.env);
    expect(pasted.code).toBe(2);
    expect(pasted.stderr).toMatch(/pasted-env\.json is not valid JSON/);
    expect(pasted.stderr, 'the start of the password, quoted by the JSON parser').not.toContain(CREDENTIALS.password!.slice(0, 6));
    const missing = await rig.cli(['run'], { REPORT_BASE_URL: undefined, REPORT_TENANT_ID: '' });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/missing environment variables: REPORT_BASE_URL, REPORT_TENANT_ID/);
    for (const [name, result] of [
      ['bad setting', badSetting],
      ['pasted .env', pasted],
      ['missing variables', missing],
    ] as const) {
      expectNothingSecret(`${result.stdout}${result.stderr}${result.logs}`, name, tokens);
    }
  });

  it('in error messages, when the secret comes from .env rather than the environment', async () => {
    // A settings file whose unknown key is the password (pasted in the wrong place): the error names the key.
    const password = CREDENTIALS.password!;
    // Single quotes: dotenv keeps the value literally, backslashes and double quotes included.
    writeFileSync(join(rig.dir, '.env'), `REPORT_PASSWORD='${password}'\n`);
    writeFileSync(join(rig.dir, 'pasted-key.json'), JSON.stringify({ [password]: true }));
    try {
      const result = await rig.cli(['run', '--config', 'pasted-key.json'], { ...gateway.env, REPORT_PASSWORD: undefined });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/pasted-key\.json/);
      expectNothingSecret(`${result.stdout}${result.stderr}${result.logs}`, 'an error about a key read from .env', []);
    } finally {
      rmSync(join(rig.dir, '.env'), { force: true });
    }
  });
});

describe('secrets stay out of a queue worker’s output', () => {
  it('with error pages echoing the token, at trace level', async () => {
    const rig = await startQueueRig({
      simulator: { portfolioIds: [1001, 1002, 1003], credentials: CREDENTIALS },
      settings: { portfolios: [1001, 1002, 1003], reportTypes: ['index'], retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 } },
    });
    const gateway = await startEchoingGateway(rig.simulator);
    try {
      gateway.echoExportError(1001, 400);
      gateway.echoExportError(1002, 500);
      rig.simulator.script(1003, 'index', DAY, [{ status: 401 }]);
      Object.assign(rig.env, gateway.env, { LOG_LEVEL: 'trace' });
      const worker = rig.startWorker();
      await rig.ready(worker);
      const backfill = await rig.cli(['backfill', '--from', DAY, '--to', DAY, '--wait']);
      expect(backfill.code).toBe(1);
      expect(gateway.echoedPages()).toBe(3);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);

      const warehouse = await rig.warehouse();
      const rows = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'status', 'error']).orderBy('portfolio_id').execute();
      expect(rows.map((row) => row.status)).toEqual(['failed', 'failed', 'loaded']);
      expect(rows[0]!.error).toMatch(/\[service said: .*\[redacted\]/);
      const tokens = rig.simulator.issuedTokens();
      expect(tokens.length).toBeGreaterThan(0);
      expect(worker.output()).toMatch(/"level":50.*"code":"EXPORT_BAD_REQUEST"/); // the failures were logged
      expectNothingSecret(worker.output(), 'worker output', tokens);
      expectNothingSecret(`${backfill.stdout}${backfill.stderr}`, 'backfill output', tokens);
      expectNothingSecret(rows.map((row) => row.error ?? '').join('\n'), 'ledger', tokens);
    } finally {
      await gateway.close();
      await rig.close();
    }
  });
});
