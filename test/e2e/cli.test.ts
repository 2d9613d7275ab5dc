import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { capturedIo } from '../helpers/captured-io.js';
import { CLI_BIN } from '../helpers/cli-bin.js';
import { until } from '../helpers/until.js';

const run = promisify(execFile);
const cwd = mkdtempSync(join(tmpdir(), 'report-sync-cli-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

async function cli(args: string[], env: Record<string, string> = {}) {
  const io = capturedIo({ DATABASE_URL: `sqlite:${join(cwd, 'w.sqlite')}`, ...env }, cwd);
  const code = await main(args, io);
  return { code, stdout: io.stdout.text, stderr: io.stderr.text };
}

describe('the report-sync command', () => {
  it('runs as an executable and prints its help', async () => {
    const { stdout } = await run(process.execPath, [CLI_BIN, '--help'], { cwd });
    for (const command of ['migrate', 'run', 'nightly', 'status', 'simulate', 'demo']) expect(stdout).toContain(command);
  });

  it('migrates an empty warehouse, and again without harm', async () => {
    const first = await cli(['migrate']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('Applied 0001-create-tables');
    const second = await cli(['migrate']);
    expect(second.stdout).toContain('is up to date');
  });

  it.each([
    [['run', '--from', '2024-02-30'], /2024-02-30 is not a day of the calendar: February 2024 has 29 days/],
    [['run', '--portfolios', '1,x'], /"x" is not a portfolio id/],
    [['run', '--report-types', "index'; drop table report_loads;--"], /is not a report type/],
    [['run', '--report-types', 'index/../../admin?x=1'], /is not a report type/],
    [['run', '--concurrency', '0'], /expected a positive whole number/],
    [['run', '--bogus'], /unknown option/],
    [['frobnicate'], /unknown command/],
  ])('refuses %j with exit 2', async (args, message) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('refuses --from after --to', async () => {
    const result = await cli(['status', '--from', '2024-03-02', '--to', '2024-03-01']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--from 2024-03-02 is after --to 2024-03-01');
  });

  it('stops with exit 2 naming a bad setting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-cli-config-'));
    mkdirSync(join(dir, 'config'));
    writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ retry: { attempts: -1 } }));
    const io = capturedIo({}, dir);
    const code = await main(['status'], io);
    expect(code).toBe(2);
    expect(io.stderr.text).toMatch(/retry\.attempts \(from .*default\.json\)/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops with exit 2 listing the missing environment variables, without the secrets set', async () => {
    const result = await cli(['run'], { REPORT_PASSWORD: 'pw-visible-nowhere' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('REPORT_BASE_URL');
    expect(result.stderr).not.toContain('pw-visible-nowhere');
  });
});

describe('report-sync simulate', () => {
  it('serves until interrupted and prints the variables to point report-sync at it', async () => {
    const controller = new AbortController();
    const io = { ...capturedIo({}, cwd), signal: controller.signal };
    const running = main(['simulate', '--port', '0'], io);
    // Waits for the lines it prints once listening, not a fixed time: a busy machine may take longer.
    await until(() => io.stdout.text.includes('REPORT_TENANT_ID='), 10_000, 'the simulator to print its variables', 20);
    const baseUrl = /REPORT_BASE_URL=(\S+)/.exec(io.stdout.text)?.[1];
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(io.stdout.text).toContain('REPORT_TENANT_ID=');
    const response = await fetch(`${baseUrl}/api/v1/report-service/report/generate/portfolio/1/export?reportType=index&date=2024-03-04`);
    expect(response.status).toBe(401);
    controller.abort();
    expect(await running).toBe(0);
  });
});
