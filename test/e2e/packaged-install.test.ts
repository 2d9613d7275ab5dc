import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, testPrefix } from '../helpers/test-redis.js';
import { createGatewaySimulator, type GatewaySimulator, simulatorEnvironment } from '../../src/simulator/gateway-simulator.js';

const run = promisify(execFile);
const PROJECT = fileURLToPath(new URL('../../', import.meta.url));
const DAY = '2024-03-05';

/**
 * The package as a user gets it: `npm pack`, installed globally into a prefix of its own, then run
 * from directories that have nothing to do with this repository. The tarball is packed from the
 * `dist/` the suite's global set-up built (`--ignore-scripts`: the prepack clean would remove it
 * under the other test files running the compiled command).
 */
describe('the packed tarball, installed globally', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'report-sync-packaged-'));
  let tarball = '';
  let bin = '';
  let installed = '';
  let simulator: GatewaySimulator;

  beforeAll(async () => {
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], { cwd: PROJECT });
    const [info] = JSON.parse(packed.stdout) as { filename: string }[];
    tarball = join(scratch, info!.filename);
    // better-sqlite3's addon is handed over as a local prebuild (prebuild-install's
    // npm_config_<package>_local_prebuilds), made from the one this checkout compiled, so the
    // install does not spend a minute compiling SQLite again; everything else is what a user gets.
    const prebuilds = join(scratch, 'prebuilds');
    mkdirSync(prebuilds);
    const { version } = (await import('better-sqlite3/package.json', { with: { type: 'json' } })).default as { version: string };
    const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
    await run('tar', ['czf', join(prebuilds, name), '-C', join(PROJECT, 'node_modules/better-sqlite3'), 'build/Release/better_sqlite3.node']);
    const prefix = join(scratch, 'prefix');
    await run('npm', ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball], {
      cwd: scratch,
      env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: prebuilds },
      timeout: 240_000,
    });
    bin = join(prefix, 'bin', 'report-sync');
    installed = join(prefix, 'lib', 'node_modules', 'report-sync');
    simulator = await createGatewaySimulator({ port: 0 });
  }, 300_000);

  afterAll(async () => {
    await simulator?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** Runs the installed `report-sync` in `cwd` with exactly `env` (plus PATH); never throws on an exit code. */
  async function reportSync(args: string[], cwd: string, env: Record<string, string>) {
    try {
      const { stdout, stderr } = await run(bin, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
    }
  }

  function directory(files: Record<string, string>): string {
    const dir = mkdtempSync(join(scratch, 'elsewhere-'));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, name, '..'), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return dir;
  }

  it('holds the compiled command, the shipped defaults, the Prometheus alert rules, the README and its docs pages, and nothing else', async () => {
    const { stdout } = await run('tar', ['tzf', tarball]);
    const files = stdout
      .trim()
      .split('\n')
      .map((path) => path.replace(/^package\//, ''))
      .sort();
    const compiled = files.filter((path) => path.startsWith('dist/'));
    // The README links to the pages of docs/, so they ship with it.
    const docs = readdirSync(join(PROJECT, 'docs')).map((name) => `docs/${name}`);
    // The alert rules ship for the Prometheus that scrapes the workers (docs/operations.md says how to load them).
    expect(files.filter((path) => !path.startsWith('dist/'))).toEqual([
      'README.md',
      'config/.env.example',
      'config/default.json',
      'config/prometheus/report-sync-alerts.yml',
      ...docs.sort(),
      'package.json',
    ]);
    // The bundle (scripts/build.mjs): the command, its two worker-thread modules and the chunks
    // they share, beside the dashboard's assets; no maps, no sources, nothing else.
    const bundle = 'dist/src/cli/';
    expect(compiled.every((path) => path.startsWith(bundle))).toBe(true);
    const assets = [...walk(join(PROJECT, 'src/dashboard/assets'))].map((path) => `${bundle}assets/${relative(join(PROJECT, 'src/dashboard/assets'), path)}`);
    expect(compiled.filter((path) => path.startsWith(`${bundle}assets/`))).toEqual(assets.sort());
    const modules = compiled.filter((path) => !path.startsWith(`${bundle}assets/`)).map((path) => path.slice(bundle.length));
    expect(modules).toEqual(expect.arrayContaining(['bin.js', 'wal-checkpoint-worker.js', 'zip-rows-worker.js']));
    expect(modules.every((name) => name.endsWith('.js') && !name.includes('/'))).toBe(true);
    expect(files.some((path) => /\.(ts|map|tsbuildinfo)$/.test(path) || path.startsWith('test/'))).toBe(false);
  });

  it('installs without tsx or any other development tool', () => {
    for (const tool of ['tsx', 'typescript', 'vitest', 'playwright-core', 'esbuild']) {
      expect(existsSync(join(installed, 'node_modules', tool)), tool).toBe(false);
    }
    expect(existsSync(join(installed, 'dist/src/cli/bin.js'))).toBe(true);
  });

  it('runs --help, migrate, a one-day run and status from another directory, reading its config/local.json', async () => {
    const cwd = directory({ 'config/local.json': JSON.stringify({ portfolios: [3003], reportTypes: ['index', 'constituent.close'], retry: { baseDelayMs: 5 } }) });
    const env = { ...simulatorEnvironment(simulator), DATABASE_URL: 'sqlite:./warehouse.sqlite', HOME: cwd };

    const help = await reportSync(['--help'], cwd, env);
    expect(help.code).toBe(0);
    for (const command of ['migrate', 'run', 'status', 'worker', 'dashboard']) expect(help.stdout).toContain(command);

    const migrate = await reportSync(['migrate'], cwd, env);
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(migrate.stdout).toContain('0001-create-tables');

    const sync = await reportSync(['run', '--from', DAY, '--to', DAY], cwd, env);
    expect(sync.code, sync.stderr).toBe(0);

    const status = await reportSync(['status', '--from', DAY, '--to', DAY, '--json'], cwd, env);
    expect(status.code, status.stderr).toBe(0);
    const report = JSON.parse(status.stdout) as { pairs: { portfolioId: number; reportType: string; loaded: number; noData: number; failed: number }[] };
    expect(report.pairs.map((pair) => [pair.portfolioId, pair.reportType, pair.loaded + pair.noData, pair.failed])).toEqual([
      [3003, 'constituent.close', 1, 0],
      [3003, 'index', 1, 0],
    ]);
    expect(existsSync(join(cwd, 'warehouse.sqlite'))).toBe(true);
  });

  it('runs the demo, and serves the dashboard with its page and assets', async () => {
    const cwd = directory({});
    const demo = await reportSync(['demo'], cwd, { HOME: cwd });
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stdout).toContain('Example query:');
    expect(existsSync(join(cwd, 'data/demo.sqlite'))).toBe(true);

    const dashboard = spawn(bin, ['dashboard', '--port', '0'], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, DATABASE_URL: 'sqlite:./data/demo.sqlite' } });
    try {
      let output = '';
      dashboard.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      dashboard.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const url = await new Promise<string>((resolve, reject) => {
        dashboard.stdout.on('data', () => {
          const found = / at (http:\/\/\S+)/.exec(output);
          if (found?.[1]) resolve(found[1]);
        });
        dashboard.on('exit', (code) => reject(new Error(`dashboard exited ${code}: ${output}`)));
      });
      const page = await fetch(url);
      expect(page.status).toBe(200);
      const html = await page.text();
      const assets = [...html.matchAll(/(?:src|href)="\/?([^":]+\.(?:js|css))"/g)];
      expect(assets.map((asset) => asset[1])).toEqual(['assets/dashboard.css', 'assets/dashboard.js']);
      for (const asset of assets) {
        const response = await fetch(new URL(asset[1]!, url));
        expect(response.status, asset[1]).toBe(200);
        expect((await response.text()).length).toBeGreaterThan(100);
      }
    } finally {
      dashboard.kill('SIGTERM');
      await once(dashboard, 'exit');
    }
  });

  it('runs every other command: config, a dry run, nightly, check, simulate, and the queue (scheduler, worker, backfill --wait) on Redis', async () => {
    const redis = testPrefix();
    const cwd = directory({ 'config/local.json': JSON.stringify({ portfolios: [5005], reportTypes: ['index'], metrics: { port: 0 } }) });
    // The queue's key prefix through the environment, as a container would set it.
    const env = { ...simulatorEnvironment(simulator), DATABASE_URL: 'sqlite:./warehouse.sqlite', HOME: cwd, REDIS_URL: TEST_REDIS_URL, REPORT_SYNC_QUEUE__PREFIX: redis.prefix };
    try {
      const config = await reportSync(['config', '--json'], cwd, env);
      expect(config.code, config.stderr).toBe(0);
      expect((JSON.parse(config.stdout) as { settings: Record<string, { value: unknown; source: string }> }).settings['queue.prefix']).toEqual({
        value: redis.prefix,
        source: 'REPORT_SYNC_QUEUE__PREFIX (environment)',
      });
      const dryRun = await reportSync(['run', '--from', DAY, '--to', DAY, '--dry-run'], cwd, env);
      expect(dryRun.code, dryRun.stderr).toBe(0);
      expect(existsSync(join(cwd, 'warehouse.sqlite'))).toBe(false);

      const nightly = await reportSync(['nightly'], cwd, env);
      expect(nightly.code, nightly.stderr).toBe(0);
      const check = await reportSync(['check', '--no-alert'], cwd, env);
      expect(check.code, check.stdout + check.stderr).toBe(0);

      const simulate = spawn(bin, ['simulate', '--port', '0'], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd } });
      try {
        const [chunk] = (await once(simulate.stdout, 'data')) as [Buffer];
        expect(chunk.toString()).toMatch(/REPORT_BASE_URL=http:\/\/127\.0\.0\.1:\d+/);
      } finally {
        simulate.kill('SIGTERM');
        await once(simulate, 'exit');
      }

      const scheduler = await reportSync(['scheduler'], cwd, env);
      expect(scheduler.code, scheduler.stderr).toBe(0);
      const worker = spawn(bin, ['worker', '--concurrency', '2'], { cwd, env: { PATH: process.env.PATH ?? '', ...env } });
      try {
        const backfill = await reportSync(['backfill', '--from', '2024-02-01', '--to', '2024-02-03', '--wait'], cwd, env);
        expect(backfill.code, backfill.stdout + backfill.stderr).toBe(0);
        const status = await reportSync(['status', '--from', '2024-02-01', '--to', '2024-02-03', '--json'], cwd, env);
        const report = JSON.parse(status.stdout) as { pairs: { portfolioId: number; loaded: number; noData: number }[] };
        expect(report.pairs.map((pair) => [pair.portfolioId, pair.loaded + pair.noData])).toEqual([[5005, 3]]);
      } finally {
        worker.kill('SIGTERM');
        const [code] = (await once(worker, 'exit')) as [number | null];
        expect(code).toBe(0);
      }
    } finally {
      await redis.cleanup();
    }
  });

  it('is configured through the environment alone, and names a bad variable', async () => {
    const cwd = directory({});
    const env = {
      ...simulatorEnvironment(simulator),
      DATABASE_URL: 'sqlite:./env-only.sqlite',
      HOME: cwd,
      REPORT_SYNC_PORTFOLIOS: '4004',
      REPORT_SYNC_REPORT_TYPES: 'index',
      REPORT_SYNC_CONCURRENCY: '2',
    };
    const sync = await reportSync(['run', '--from', DAY, '--to', DAY], cwd, env);
    expect(sync.code, sync.stderr).toBe(0);
    const status = await reportSync(['status', '--from', DAY, '--to', DAY, '--json'], cwd, env);
    const report = JSON.parse(status.stdout) as { pairs: { portfolioId: number; reportType: string; loaded: number }[] };
    expect(report.pairs.map((pair) => [pair.portfolioId, pair.reportType, pair.loaded])).toEqual([[4004, 'index', 1]]);

    const bad = await reportSync(['status'], cwd, { ...env, REPORT_SYNC_CONCURRENCY: 'many' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('concurrency (from REPORT_SYNC_CONCURRENCY): "many" is not a number');
  });
});

function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else yield path;
  }
}
