import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import config from '../../vitest.config.js';
import { relativeImports } from '../helpers/relative-imports.js';

/*
 * The unit tier (`npm run test:unit`) runs with no Redis, Postgres, Chromium or build. A unit test
 * file that asks for one of them belongs in test/integration/ (Redis, Postgres) or test/e2e/ (the
 * compiled command, the browser); this keeps one from landing in test/unit/ and failing only on a
 * machine without the services.
 */

const ROOT = new URL('../../', import.meta.url).pathname;

/** The helpers that reach a service, the compiled command or the browser, with what they need. */
const SERVICE_HELPERS: Record<string, string> = {
  'test/helpers/test-redis.ts': 'the shared Redis',
  'test/helpers/private-redis.ts': 'redis-server',
  'test/helpers/private-postgres.ts': 'a Postgres server',
  'test/helpers/pgbouncer.ts': 'pgbouncer',
  'test/helpers/queue-rig.ts': 'the shared Redis and the compiled command',
  'test/helpers/cli-bin.ts': 'the compiled command (dist/)',
  'test/helpers/cli-process.ts': 'the compiled command (dist/)',
  'test/helpers/on-terminal.ts': 'the compiled command (dist/)',
  'test/helpers/measured-cli-run.ts': 'the compiled command (dist/)',
  'test/helpers/headless-chromium.ts': 'Chromium',
};

/** Packages a unit test file would only import to talk to a server or a browser itself. */
const SERVICE_PACKAGES = ['ioredis', 'bullmq', 'pg', 'pg-copy-streams', 'mysql2', 'mysql2/promise', 'playwright-core'];

/**
 * Whether the code opens a Postgres warehouse: names `DIALECTS` (every dialect), or calls
 * createTempWarehouse / createTempDatabase with anything but 'sqlite' (no argument is SQLite too).
 * Read from the syntax tree, so words in comments and strings do not count.
 */
function opensPostgres(file: string, text: string): boolean {
  let found = false;
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === 'DIALECTS') found = true;
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && /^createTemp(Database|Warehouse)$/.test(node.expression.text)) {
      const [first] = node.arguments;
      if (first !== undefined && !(ts.isStringLiteral(first) && first.text === 'sqlite')) found = true;
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest));
  return found;
}

function testFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder))
    .sort()
    .flatMap((name) => {
      const path = join(folder, name);
      if (statSync(join(ROOT, path)).isDirectory()) return testFiles(path);
      return name.endsWith('.test.ts') ? [path] : [];
    });
}

/** What each file under test/ reaches through test/ files (helpers importing helpers), itself excluded. */
function reachedTestFiles(): (file: string) => Set<string> {
  const edges = new Map<string, string[]>();
  for (const { from, to } of relativeImports(ROOT, ['test'])) {
    if (to === null || !to.startsWith('test/')) continue;
    edges.set(from, [...(edges.get(from) ?? []), to]);
  }
  return (file) => {
    const seen = new Set<string>();
    const pending = [...(edges.get(file) ?? [])];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (seen.has(next)) continue;
      seen.add(next);
      pending.push(...(edges.get(next) ?? []));
    }
    return seen;
  };
}

/** Why `file` (a test/unit file) would need more than the unit tier offers; empty when it does not. */
function serviceNeeds(file: string, reached: Set<string>): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const needs = [...reached].filter((helper) => helper in SERVICE_HELPERS).map((helper) => `${file} reaches ${helper}: ${SERVICE_HELPERS[helper]}`);
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    if (SERVICE_PACKAGES.includes(fileName)) needs.push(`${file} imports ${fileName}`);
  }
  if (opensPostgres(file, text)) needs.push(`${file} opens a Postgres warehouse (DIALECTS, or createTemp… not given 'sqlite')`);
  return needs;
}

describe('the unit tier', () => {
  it('holds no test file that needs Redis, Postgres, Chromium or the compiled command', () => {
    const reaches = reachedTestFiles();
    const files = testFiles('test/unit');
    expect(files.length).toBeGreaterThan(0);
    expect(files.flatMap((file) => serviceNeeds(file, reaches(file)))).toEqual([]);
  });

  it('would name a file of the integration tier, and what it needs, were it moved into test/unit', () => {
    const reaches = reachedTestFiles();
    const redis = 'test/integration/queue/redis-rate-gate.test.ts';
    const postgres = 'test/integration/warehouse/ledger/ledger-writer.test.ts';
    expect(serviceNeeds(redis, reaches(redis))).toEqual([`${redis} reaches test/helpers/test-redis.ts: the shared Redis`, `${redis} imports ioredis`]);
    expect(serviceNeeds(postgres, reaches(postgres))).toEqual([`${postgres} opens a Postgres warehouse (DIALECTS, or createTemp… not given 'sqlite')`]);
  });

  it('sees through a helper that reaches a service by way of another helper', () => {
    const reaches = reachedTestFiles();
    expect([...reaches('test/helpers/queue-rig.ts')]).toEqual(expect.arrayContaining(['test/helpers/test-redis.ts', 'test/helpers/cli-process.ts', 'test/helpers/cli-bin.ts']));
  });
});

describe('the tiers of vitest.config.ts', () => {
  it('are one project per folder under test/ that holds test files, each including that folder alone', () => {
    const folders = readdirSync(join(ROOT, 'test'))
      .filter((name) => statSync(join(ROOT, 'test', name)).isDirectory() && testFiles(`test/${name}`).length > 0)
      .sort();
    const projects = (config.test?.projects ?? []).map((project) => (typeof project === 'object' && 'test' in project ? project.test : undefined));
    expect(projects.map((project) => project?.include).sort()).toEqual(folders.map((folder) => [`test/${folder}/**/*.test.ts`]));
    expect(projects.map((project) => project?.name).sort()).toEqual(folders);
  });
});
