import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_PAGE, configurationPage, documentedSettings, END, settingsTable, START } from '../../../scripts/config-docs.js';
import { describeEnvironment } from '../../../src/config/describe-environment.js';
import { settingVariables } from '../../../src/config/setting-variables.js';

const SCHEMA_SOURCE = readFileSync(new URL('../../../src/config/settings-schema.ts', import.meta.url), 'utf8');

/** The text between the page's settings markers. */
function settingsSection(page: string): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  expect(start, `docs/configuration.md has its ${START} marker`).toBeGreaterThanOrEqual(0);
  expect(end, `docs/configuration.md has its ${END} marker after ${START}`).toBeGreaterThan(start);
  return page.slice(start, end);
}

describe('docs/configuration.md', () => {
  it('holds exactly the settings table the settings schema generates', () => {
    const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
    expect(page, 'docs/configuration.md differs from src/config/settings-schema.ts: run `npm run docs:config` and commit the page').toBe(configurationPage(page));
  });

  it("gives each setting variable a row, and every report type's variable by its pattern", () => {
    const section = settingsSection(readFileSync(CONFIGURATION_PAGE, 'utf8'));
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    for (const variable of settingVariables()) {
      if (variable.path[0] === 'formats') continue;
      expect(
        rows.some((row) => row.startsWith(`| \`${variable.path.join('.')}\` | \`${variable.name}\` |`)),
        variable.name,
      ).toBe(true);
    }
    expect(rows.some((row) => row.startsWith('| `formats` | `REPORT_SYNC_FORMATS__<TYPE>`'))).toBe(true);
    // Retired settings are listed so, for whoever still sets them.
    expect(rows.find((row) => row.startsWith('| `token.minLifetimeSeconds` |'))).toContain('| retired |');
  });

  it('gives each variable `report-sync config` shows (secrets, addresses) a row in its hand-written variables table', () => {
    const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
    const table = page.slice(page.indexOf('| variable | meaning |'));
    const firstCells = table
      .slice(0, table.indexOf('\n\n'))
      .split('\n')
      .map((row) => row.split(' | ')[0] ?? '');
    const shown = describeEnvironment({ env: {}, dotEnvVariables: new Set(), databaseUrl: 'sqlite:./data/warehouse.sqlite', redisUrl: 'redis://127.0.0.1:6379' });
    expect(shown.length).toBeGreaterThan(10);
    for (const { name } of shown)
      expect(
        firstCells.some((cell) => cell.includes(`\`${name}\``)),
        name,
      ).toBe(true);
  });
});

describe('the generator (npm run docs:config)', () => {
  it('reads each meaning from the JSDoc above the key, on one line, without its tags', () => {
    const settings = documentedSettings(SCHEMA_SOURCE);
    const byKey = new Map(settings.map((setting) => [setting.path.join('.'), setting]));
    // A comment of several lines is one line of the table.
    expect(byKey.get('concurrency')?.meaning).toMatch(
      /^Downloads at once in one process: the export requests it has in flight\. A `worker` takes .* as many slices as downloads\.$/,
    );
    const stalled = byKey.get('queue.maxStalledCount');
    expect(stalled?.meaning).toMatch(/^Times a job may stall .* a Redis restart that outlived the locks\.$/);
    expect(stalled?.statedDefault).toBe('2');
    expect(byKey.get('queue.keepFailed.count')?.meaning).toBe('Most failed jobs kept in Redis.');
    expect(byKey.get('token.minRenewalIntervalMs')?.retired).toBe(true);
    // Groups are no rows of their own.
    expect(byKey.has('queue') || byKey.has('queue.keepFailed')).toBe(false);
  });

  it('refuses a setting without a comment, naming it', () => {
    const uncommented = SCHEMA_SOURCE.replace(/\n {4}\/\*\*(?:(?!\*\/)[\s\S])*\*\/(?=\n {4}concurrency:)/, '').replace(/\n\s*\/\*\* Most failed jobs kept in Redis\. \*\//, '');
    expect(uncommented).not.toBe(SCHEMA_SOURCE);
    expect(() => documentedSettings(uncommented)).toThrow(/without a JSDoc comment .*: concurrency, queue\.keepFailed\.count$/);
  });

  it('refuses an @defaultValue that is not the default the schema gives', () => {
    const settings = documentedSettings(SCHEMA_SOURCE).map((setting) => (setting.path.join('.') === 'queue.maxStalledCount' ? { ...setting, statedDefault: '3' } : setting));
    expect(() => settingsTable(settings)).toThrow("queue.maxStalledCount: its comment's @defaultValue says 3, the schema gives 2");
  });

  it('writes between the markers only, and refuses a page without them', () => {
    const page = `# Title\n\nprose\n\n${START}\nold table\n${END}\n\nmore prose\n`;
    expect(configurationPage(page, '| t |')).toBe(`# Title\n\nprose\n\n${START}\n\n| t |\n\n${END}\n\nmore prose\n`);
    expect(() => configurationPage('# no markers\n', '| t |')).toThrow(`no ${START} … ${END} markers`);
  });
});
