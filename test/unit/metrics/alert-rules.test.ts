import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/*
 * The shipped Prometheus alert rules, checked and unit-tested with Debian's promtool (a local
 * binary, like tsc: no server is started). Each alert has a promtool test file under
 * test/fixtures/prometheus/ with the case it fires on and the ordinary neighbour it must not.
 */

const ROOT = new URL('../../../', import.meta.url).pathname;
const RULES = 'config/prometheus/report-sync-alerts.yml';
const TESTS_DIR = 'test/fixtures/prometheus';
const TEST_FILES = readdirSync(join(ROOT, TESTS_DIR))
  .filter((name) => name.endsWith('.test.yml'))
  .sort()
  .map((name) => `${TESTS_DIR}/${name}`);

interface PromtoolRun {
  readonly exitCode: number;
  /** stdout then stderr: promtool prints failures to stderr. */
  readonly output: string;
}

/** Runs promtool in `cwd`; never rejects on a failing check, only when promtool cannot be run. */
function promtool(args: readonly string[], cwd = ROOT): Promise<PromtoolRun> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (!error) return resolve({ exitCode: 0, output });
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return reject(
          new Error("promtool is not installed: the alert rules are tested with Prometheus' own tool. Install Debian's package: apt-get install prometheus (.ci/run does)"),
        );
      }
      resolve({ exitCode: typeof error.code === 'number' ? error.code : -1, output });
    });
  });
}

interface RuleFile {
  groups: Array<{ rules: Array<{ alert: string }> }>;
}
interface PromtoolTestFile {
  tests: Array<{ name: string; alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
}

function alertNames(rulesText: string): string[] {
  return (parse(rulesText) as RuleFile).groups.flatMap((group) => group.rules.map((rule) => rule.alert));
}

const temporary: string[] = [];
afterAll(() => {
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The test files run against a changed copy of the rules, in a temporary tree of the same layout
 * (the test files name the rules by a relative path).
 */
async function testAgainst(rulesText: string, testFile: string): Promise<PromtoolRun> {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-alert-rules-'));
  temporary.push(dir);
  mkdirSync(join(dir, 'config/prometheus'), { recursive: true });
  writeFileSync(join(dir, RULES), rulesText);
  cpSync(join(ROOT, TESTS_DIR), join(dir, TESTS_DIR), { recursive: true });
  return promtool(['test', 'rules', testFile], dir);
}

/** The rules text with `from` replaced by `to` inside one alert's rule only (it must be there). */
function changeRule(rulesText: string, alert: string, from: string, to: string): string {
  const start = rulesText.indexOf(`- alert: ${alert}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const next = rulesText.indexOf('- alert: ', start + 1);
  const end = next === -1 ? rulesText.length : next;
  const rule = rulesText.slice(start, end);
  expect(rule).toContain(from);
  return rulesText.slice(0, start) + rule.replace(from, to) + rulesText.slice(end);
}

/** An alert's promtool test file, named after it: `ReportSyncNightMissing` → `…/night-missing.test.yml`. */
function testFileOf(alert: string): string {
  const name = alert.replace(/^ReportSync/, '').replace(/(?<!^)([A-Z])/g, '-$1');
  return `${TESTS_DIR}/${name.toLowerCase()}.test.yml`;
}

describe('the shipped Prometheus alert rules', () => {
  const rulesText = readFileSync(join(ROOT, RULES), 'utf8');

  it('pass promtool check rules', async () => {
    const run = await promtool(['check', 'rules', RULES]);
    expect(run.output).toContain(`Checking ${RULES}\n  SUCCESS: 5 rules found`);
    expect(run.exitCode).toBe(0);
  });

  it('pass every promtool test file, each reported a success of its own', async () => {
    expect(TEST_FILES).toHaveLength(5);
    const run = await promtool(['test', 'rules', ...TEST_FILES]);
    for (const file of TEST_FILES) expect(run.output).toContain(`Unit Testing:  ${file}\n  SUCCESS\n`);
    expect(run.output).not.toContain('FAILED');
    expect(run.exitCode).toBe(0);
  });

  it('have, for every alert, a promtool test file named after it, with a case where it fires and one where it stays silent', () => {
    const alerts = alertNames(rulesText);
    expect([...alerts].sort()).toEqual(['ReportSyncNightMissing', 'ReportSyncQueueNotDraining', 'ReportSyncSlicesFailing', 'ReportSyncWorkerDown', 'ReportSyncWorkerNotReady']);
    expect(alerts.map(testFileOf).sort()).toEqual(TEST_FILES);
    for (const alert of alerts) {
      const cases = (parse(readFileSync(join(ROOT, testFileOf(alert)), 'utf8')) as PromtoolTestFile).tests.flatMap((test) => test.alert_rule_test);
      expect(cases.length, `${testFileOf(alert)} tests only ${alert}`).toBe(cases.filter((test) => test.alertname === alert).length);
      expect(
        cases.some((test) => test.exp_alerts.length > 0),
        `${alert} fires in some case`,
      ).toBe(true);
      expect(
        cases.some((test) => test.exp_alerts.length === 0),
        `${alert} stays silent in some case`,
      ).toBe(true);
    }
  });

  // Each guard against an ordinary night taken out in turn: the neighbour case must then fail,
  // so the silent cases above are not silent by accident.
  const guards = [
    {
      guard: "a night's grace",
      alert: 'ReportSyncNightMissing',
      from: '(24 + 6) * 3600',
      to: '(24 + 0) * 3600',
      neighbour: 'a slow night that finishes within its grace (08:00) is not missing',
    },
    {
      guard: 'the share of failed slices',
      alert: 'ReportSyncSlicesFailing',
      from: '> 0.05',
      to: '> 0',
      neighbour: 'a backfill of many thousand slices with a dozen failures does not fire',
    },
    {
      guard: 'the count of failed slices',
      alert: 'ReportSyncSlicesFailing',
      from: '>= 5',
      to: '>= 1',
      neighbour: 'a night with one failed slice, then one with four, does not fire',
    },
    {
      guard: 'the minutes a readiness check may fail',
      alert: 'ReportSyncWorkerNotReady',
      from: 'for: 5m',
      to: 'for: 1m',
      neighbour: 'refused credentials for minutes fire; a Redis restart of four minutes does not',
    },
    {
      guard: 'the minutes a worker may be unscraped',
      alert: 'ReportSyncWorkerDown',
      from: 'for: 5m',
      to: 'for: 0m',
      neighbour: "a worker gone for minutes fires; one restarting for two scrapes, or another job's target, does not",
    },
    {
      guard: 'no slice ended',
      alert: 'ReportSyncQueueNotDraining',
      from: 'increase(report_sync_slices_total[15m])) == 0',
      to: 'increase(report_sync_slices_total[15m])) >= 0',
      neighbour: 'a long backfill that drains does not fire, however long the queue',
    },
  ];
  for (const { guard, alert, from, to, neighbour } of guards) {
    it(`catch a rule without ${guard} (${alert})`, async () => {
      const run = await testAgainst(changeRule(rulesText, alert, from, to), testFileOf(alert));
      expect(run.output).toContain(`name: ${neighbour},\n    alertname: ${alert},`);
      expect(run.exitCode).toBe(1);
    });
  }
});
