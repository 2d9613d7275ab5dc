import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shiftIsoDate, todayIn } from '../../src/dates/report-date.js';
import { startCliProcess, type CliProcess } from '../helpers/cli-process.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { DEEP_RECURSION } from '../helpers/deep-recursion.js';
import { DIALECTS, createTempWarehouse } from '../helpers/temp-warehouse.js';
import { TEST_REDIS_URL, testPrefix } from '../helpers/test-redis.js';
import { until } from '../helpers/until.js';

/*
 * The dashboard under hostile queries (issue 25): whatever a URL asks for, the process holds a
 * bounded amount of memory and answers each request within seconds, and its cheap routes stay
 * answered meanwhile. A query's grid is sized from its parameters before the ledger is counted;
 * dates outside the window (dates.earliest to tomorrow) are refused, naming the setting; at most a
 * few grids are computed at once. Figures are printed.
 */

const PORTFOLIOS = Array.from({ length: 20 }, (_, i) => 3001 + i);
const TYPES = ['index', 'constituent.close'];
const DAYS = 800;
const today = todayIn('UTC');
const yesterday = shiftIsoDate(today, -1);
const tomorrow = shiftIsoDate(today, 1);
const FIRST = shiftIsoDate(yesterday, -(DAYS - 1));
/** A slice dated with a year typed wrong, recorded before the dates window existed. */
const TYPO_DATE = '0224-01-08';

/** Peak and current resident memory of a process, in MB, from /proc (Linux). */
function memoryOf(pid: number): { peakMb: number; nowMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
  return { peakMb: Math.round(kb('VmHWM') / 1024), nowMb: Math.round(kb('VmRSS') / 1024) };
}

interface Timed {
  readonly path: string;
  readonly status: number;
  readonly ms: number;
  readonly body: string;
  readonly retryAfter: string | null;
}

/**
 * One GET on a connection of its own, as separate clients would send it: a kept-alive connection
 * that the server closes as idle while the next request goes out would fail the request, not the
 * dashboard.
 */
function timedGet(url: string, path: string): Promise<Timed> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    // A request that is not answered at all fails the test by its own limit, not by hanging it.
    const request = get(`${url}${path}`, { agent: false, timeout: 20_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const retryAfter = response.headers['retry-after'];
        resolve({ path, status: response.statusCode!, ms: Math.round(performance.now() - started), body: Buffer.concat(chunks).toString(), retryAfter: retryAfter ?? null });
      });
    });
    request.on('timeout', () => request.destroy(new Error(`no answer to ${path} in 20 s`)));
    request.on('error', reject);
  });
}

async function startDashboard(dir: string, configFile: string, env: Record<string, string>): Promise<{ process: CliProcess; url: string }> {
  const process = startCliProcess(['dashboard', '--port', '0', '--config', configFile], { cwd: dir, env });
  await until(
    () => /at (http:\/\/\S+)/.test(process.stdout()),
    15_000,
    () => `the dashboard to listen (output so far: ${process.output()})`,
  );
  return { process, url: /at (http:\/\/\S+)/.exec(process.stdout())![1]! };
}

async function stopDashboard(dashboard: { process: CliProcess } | undefined): Promise<void> {
  if (!dashboard) return;
  // SIGKILL: a dashboard stuck building a grid (the old code) would not get to its SIGTERM handler.
  dashboard.process.child.kill('SIGKILL');
  await dashboard.process.exited;
}

describe.each(DIALECTS)('the dashboard under hostile queries (%s)', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  let dir: string;
  let configFile: string;
  let dashboard: { process: CliProcess; url: string } | undefined;

  beforeAll(async () => {
    warehouse = await createTempWarehouse(dialect);
    // 32,000 slices ending yesterday, generated in the database; every 13th failed.
    const types = sql.join(TYPES.map((type) => sql`(${type})`));
    if (dialect === 'sqlite') {
      await sql`
        with recursive d(day) as (select 0 union all select day + 1 from d where day < ${DAYS - 1}),
          p(id) as (select ${PORTFOLIOS[0]} union all select id + 1 from p where id < ${PORTFOLIOS.at(-1)}),
          t(name) as (values ${types})
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
        select id, name, date(${FIRST}, '+' || day || ' days'), case when (id + day) % 13 = 0 then 'failed' else 'loaded' end, 10, 1,
          '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'
        from p, t, d`.execute(warehouse.db);
    } else if (dialect === 'mysql') {
      const names = sql.join(
        TYPES.map((type) => sql`select ${type} as name`),
        sql` union all `,
      );
      await sql`${DEEP_RECURSION}
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
        with recursive d(day) as (select 0 union all select day + 1 from d where day < ${DAYS - 1}),
          p(id) as (select ${PORTFOLIOS[0]} union all select id + 1 from p where id < ${PORTFOLIOS.at(-1)}),
          t as (${names})
        select id, name, cast(${FIRST} as date) + interval day day, case when (id + day) % 13 = 0 then 'failed' else 'loaded' end, 10, 1,
          '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'
        from p, t, d`.execute(warehouse.db);
      await sql`analyze table report_loads`.execute(warehouse.db);
    } else {
      await sql`
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
        select id, name, cast(${FIRST} as date) + day, case when (id + day) % 13 = 0 then 'failed' else 'loaded' end, 10, 1,
          '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'
        from generate_series(${PORTFOLIOS[0]}::int, ${PORTFOLIOS.at(-1)}::int) p(id), (values ${types}) t(name), generate_series(0, ${DAYS - 1}) d(day)`.execute(warehouse.db);
      await sql`analyze report_loads`.execute(warehouse.db);
    }
    await warehouse.db
      .insertInto('report_loads')
      .values(ledgerRow(PORTFOLIOS[0]!, 'index', TYPO_DATE, 'failed', { error: 'EXPORT_NOT_FOUND: no such report' }))
      .execute();
    dir = mkdtempSync(join(tmpdir(), 'report-sync-hostile-'));
    configFile = join(dir, 'settings.json');
    writeFileSync(configFile, JSON.stringify({ portfolios: PORTFOLIOS, reportTypes: TYPES }));
    dashboard = await startDashboard(dir, configFile, { DATABASE_URL: warehouse.databaseUrl });
  }, 120_000);

  afterAll(async () => {
    await stopDashboard(dashboard);
    await warehouse?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers 20 hostile requests at once within 3 s each, in at most 300 MB, and /api/meta within 1 s meanwhile', async () => {
    const { url, process: cli } = dashboard!;
    const many = (count: number) => Array.from({ length: count }, (_, i) => 1 + i).join(',');
    const hostile = [
      ...Array.from({ length: 4 }, () => 'api/coverage?from=0100-01-01&to=9999-12-31&period=day'),
      `api/coverage?from=2000-01-01&to=${tomorrow}&period=day`,
      `api/coverage?from=2000-01-01&to=${tomorrow}&period=day&columns=2000`,
      `api/coverage?from=2000-01-01&to=${tomorrow}`,
      `api/coverage?from=2000-01-01&to=${tomorrow}&period=week`,
      `api/coverage?from=2000-01-01&to=${tomorrow}&period=month&columns=2000`,
      'api/coverage?columns=2000',
      'api/coverage?columns=2000&period=day',
      `api/coverage?portfolios=${many(1500)}`,
      `api/coverage?portfolios=${many(1500)}&from=2000-01-01&period=day`,
      `api/coverage?portfolios=${many(1500)}&from=2000-01-01`,
      `api/coverage?from=2000-01-01&to=${tomorrow}&period=day&portfolios=${PORTFOLIOS.slice(0, 7).join(',')}`,
      `api/coverage?from=${TYPO_DATE}&columns=120`,
      'api/coverage?from=9999-01-01',
      `api/failures?from=2000-01-01&to=${tomorrow}`,
      `api/failures?from=0100-01-01&to=9999-12-31`,
      `api/coverage?from=2000-01-01&to=${tomorrow}&period=week&portfolios=${many(1500)}&reportTypes=index,constituent.close,constituent.open`,
    ];
    expect(hostile).toHaveLength(20);
    const before = memoryOf(cli.child.pid!);

    let burstOver = false;
    const metaTimes: number[] = [];
    const pinging = (async () => {
      while (!burstOver) {
        const meta = await timedGet(url, 'api/meta');
        expect(meta.status).toBe(200);
        metaTimes.push(meta.ms);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const started = performance.now();
    const answers = await Promise.all(hostile.map((path) => timedGet(url, path)));
    const burstMs = Math.round(performance.now() - started);
    burstOver = true;
    await pinging;
    const after = memoryOf(cli.child.pid!);

    console.log(
      `${dialect}: 20 hostile requests in ${burstMs} ms; slowest ${Math.max(...answers.map((a) => a.ms))} ms; status and ms ${answers.map((a) => `${a.status}/${a.ms}`).join(' ')}; ` +
        `/api/meta ${metaTimes.length} times, slowest ${Math.max(...metaTimes)} ms; RSS ${before.nowMb} MB before, ${after.nowMb} MB after, peak ${after.peakMb} MB`,
    );
    for (const answer of answers) {
      expect([200, 400, 503], `${answer.path}: ${answer.body.slice(0, 200)}`).toContain(answer.status);
      expect(answer.ms, answer.path).toBeLessThanOrEqual(3000);
      if (answer.status === 503) expect(answer.retryAfter).toMatch(/^\d+$/);
    }
    // The refusals say why, whatever else was in flight.
    for (const answer of answers.filter((a) => a.path.includes('0100-01-01'))) {
      expect(answer.status).toBe(400);
      expect(answer.body).toContain('is before dates.earliest (2000-01-01)');
      expect(answer.body).toContain('REPORT_SYNC_DATES__EARLIEST');
    }
    expect(answers.find((a) => a.path === 'api/coverage?from=9999-01-01')!.body).toContain('is after tomorrow');
    expect(metaTimes.length).toBeGreaterThan(0);
    expect(Math.max(...metaTimes)).toBeLessThanOrEqual(1000);
    expect(after.peakMb).toBeLessThanOrEqual(300);

    // Each hostile query alone, now nothing else runs: answered, refused or coarsened, never a 503.
    for (const path of hostile) {
      const alone = await timedGet(url, path);
      expect([200, 400], `${path}: ${alone.body.slice(0, 200)}`).toContain(alone.status);
      expect(alone.ms, path).toBeLessThanOrEqual(3000);
      if (alone.status === 400) expect(JSON.parse(alone.body).error).toMatch(/dates\.earliest|after tomorrow|more than one page shows \(150,000\); choose/);
    }
    expect(memoryOf(cli.child.pid!).peakMb).toBeLessThanOrEqual(300);
  }, 120_000);

  it('a slice dated 0224 in the ledger: the page\'s default request stays small and fast, the "whole ledger" link is refused at once', async () => {
    const { url, process: cli } = dashboard!;
    const before = memoryOf(cli.child.pid!);
    const page = await timedGet(url, 'api/coverage?columns=120');
    expect(page.status, page.body.slice(0, 300)).toBe(200);
    const view = JSON.parse(page.body) as { from: string; to: string; period: string; rows: unknown[]; columns: unknown[]; ledger: { from: string; to: string } };
    expect(view).toMatchObject({ from: shiftIsoDate(yesterday, -89), to: yesterday, period: 'day', ledger: { from: TYPO_DATE, to: yesterday } });
    expect(view.rows.length * view.columns.length).toBe(PORTFOLIOS.length * TYPES.length * 90);
    expect(page.ms).toBeLessThan(1500);

    // The page's link to everything the ledger holds starts at the typo: refused, naming the setting.
    const whole = await timedGet(url, `api/coverage?from=${TYPO_DATE}&columns=120`);
    expect(whole.status).toBe(400);
    expect(JSON.parse(whole.body).error).toContain(`from ${TYPO_DATE} is before dates.earliest (2000-01-01)`);
    expect(JSON.parse(whole.body).error).toContain('REPORT_SYNC_DATES__EARLIEST');
    expect(whole.ms).toBeLessThan(1000);
    const after = memoryOf(cli.child.pid!);
    console.log(`${dialect}: default page request ${page.ms} ms, whole-ledger link refused in ${whole.ms} ms; RSS ${before.nowMb} → ${after.nowMb} MB, peak ${after.peakMb} MB`);
    expect(after.nowMb - before.nowMb).toBeLessThan(50);
  });

  it('refuses query dates outside the window, naming the setting; recent dates, and older ones with dates.earliest lowered, are drawn', async () => {
    const { url } = dashboard!;
    const refusals: [string, string][] = [
      ['api/coverage?from=1999-12-31', 'from 1999-12-31 is before dates.earliest (2000-01-01)'],
      [`api/coverage?from=2024-01-01&to=${shiftIsoDate(tomorrow, 1)}`, `to ${shiftIsoDate(tomorrow, 1)} is after tomorrow (${tomorrow} in UTC)`],
      ['api/failures?from=0224-01-08&to=2024-01-31', 'from 0224-01-08 is before dates.earliest (2000-01-01)'],
      [`api/slice?portfolio=${PORTFOLIOS[0]}&reportType=index&date=${TYPO_DATE}`, `date ${TYPO_DATE} is before dates.earliest (2000-01-01)`],
    ];
    for (const [path, message] of refusals) {
      const answer = await timedGet(url, path);
      expect(answer.status, path).toBe(400);
      expect(JSON.parse(answer.body).error).toContain(message);
    }
    const recent = await timedGet(url, `api/coverage?from=${shiftIsoDate(yesterday, -6)}&to=${tomorrow}`);
    expect(recent.status, recent.body.slice(0, 200)).toBe(200);
    expect(JSON.parse(recent.body)).toMatchObject({ period: 'day', columns: { length: 9 } });

    const lowered = await startDashboard(dir, configFile, { DATABASE_URL: warehouse.databaseUrl, REPORT_SYNC_DATES__EARLIEST: '0200-01-01' });
    try {
      const old = await timedGet(lowered.url, `api/coverage?from=0224-01-01&to=0224-01-31&portfolios=${PORTFOLIOS[0]}&reportTypes=index`);
      expect(old.status, old.body.slice(0, 200)).toBe(200);
      expect(JSON.parse(old.body)).toMatchObject({ period: 'day', totals: { failed: 1, missing: 30 } });
      const slice = await timedGet(lowered.url, `api/slice?portfolio=${PORTFOLIOS[0]}&reportType=index&date=${TYPO_DATE}`);
      expect(slice.status).toBe(200);
    } finally {
      await stopDashboard(lowered);
    }
  }, 60_000);
});

describe('Bull Board behind the dashboard, over a queue of thousands of jobs', () => {
  it('lists at most 100 jobs a page, whatever jobsPerPage asks', async () => {
    const scope = testPrefix();
    const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new Queue('report-exports', { connection, prefix: scope.prefix });
    const warehouse = await createTempWarehouse('sqlite');
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-board-'));
    let dashboard: { process: CliProcess; url: string } | undefined;
    try {
      const jobs = Array.from({ length: 3000 }, (_, i) => {
        const slice = { portfolioId: 1001 + (i % 100), reportType: 'index', reportDate: shiftIsoDate('2020-01-01', Math.floor(i / 100)) };
        return { name: 'export-slice', data: slice, opts: { jobId: `${slice.portfolioId}:${slice.reportType}:${slice.reportDate}` } };
      });
      for (let i = 0; i < jobs.length; i += 500) await queue.addBulk(jobs.slice(i, i + 500));
      expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 3000 });
      const configFile = join(dir, 'settings.json');
      writeFileSync(configFile, JSON.stringify({ queue: { prefix: scope.prefix } }));
      dashboard = await startDashboard(dir, configFile, { DATABASE_URL: warehouse.databaseUrl, REDIS_URL: TEST_REDIS_URL });

      const figures: string[] = [];
      for (const [query, pages] of [
        ['status=waiting&jobsPerPage=50000', 30],
        ['status=waiting&jobsPerPage=1e9&page=2', 30],
        ['status=latest&jobsPerPage=50000', 1],
        ['status=waiting&jobsPerPage=20', 150],
      ] as const) {
        const answer = await timedGet(dashboard.url, `queues/api/queues?activeQueue=report-exports&${query}`);
        expect(answer.status, answer.body.slice(0, 200)).toBe(200);
        const body = JSON.parse(answer.body) as { queues: { name: string; jobs: unknown[]; pagination: { pageCount: number } }[] };
        const listed = body.queues.find((q) => q.name === 'report-exports')!;
        expect(listed.jobs.length, query).toBe(query.includes('jobsPerPage=20') ? 20 : 100);
        expect(listed.pagination.pageCount, query).toBe(pages);
        figures.push(`${query}: ${listed.jobs.length} jobs, ${answer.ms} ms`);
      }
      console.log(`Bull Board over 3,000 waiting jobs: ${figures.join('; ')}; RSS peak ${memoryOf(dashboard.process.child.pid!).peakMb} MB`);
    } finally {
      await stopDashboard(dashboard);
      await queue.close();
      connection.disconnect();
      await scope.cleanup();
      await warehouse.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
