import { existsSync, readFileSync } from 'node:fs';
import type { TestSpecification, Vitest } from 'vitest/node';
import { describe, expect, it } from 'vitest';
import { FILE_SECONDS_PATH, LongestFirstSequencer, fileKey } from '../sequencer/longest-first-sequencer.js';

/*
 * The order vitest runs test files in: each group's longest first (by the committed table of past
 * durations), so no long file is left to run alone at a group's end.
 */

const ROOT = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');

/** A file of `project` in group `groupOrder`, as the sequencer sees it. */
function spec(project: string, path: string, groupOrder: number): TestSpecification {
  return { project: { name: project, config: { sequence: { groupOrder } } }, moduleId: `${ROOT}/${path}` } as unknown as TestSpecification;
}

function pathsOf(specs: readonly TestSpecification[]): string[] {
  return specs.map((file) => file.moduleId.slice(ROOT.length + 1));
}

describe('LongestFirstSequencer', () => {
  const sequencer = new LongestFirstSequencer({ config: { root: ROOT } } as unknown as Vitest);
  const seconds = JSON.parse(readFileSync(FILE_SECONDS_PATH, 'utf8')) as Record<string, number>;

  it('runs each group in turn, its longest files first across its projects', async () => {
    const files = [
      spec('integration', 'test/integration/queue/close-worker.test.ts', 1),
      spec('e2e', 'test/e2e/slice-checks.test.ts', 1),
      spec('unit', 'test/unit/text/count-of.test.ts', 0),
      spec('faults', 'test/faults/upstream-files.test.ts', 1),
      spec('bench', 'test/bench/bench-smoke.test.ts', 0),
    ];
    const sorted = pathsOf(await sequencer.sort(files));
    expect(sorted.slice(0, 2)).toEqual(['test/bench/bench-smoke.test.ts', 'test/unit/text/count-of.test.ts']);
    const waiting = sorted.slice(2);
    const took = (path: string) => seconds[fileKey(path.split('/')[1]!, path)]!;
    expect(waiting.map(took)).toEqual(waiting.map(took).sort((a, b) => b - a));
    expect(waiting).toHaveLength(3);
  });

  it('starts a file missing from the table early, as a long one, and keeps the order of files that took as long', async () => {
    const files = [spec('unit', 'test/unit/text/count-of.test.ts', 0), spec('unit', 'test/unit/new-one.test.ts', 0), spec('bench', 'test/bench/bench-smoke.test.ts', 0)];
    expect(pathsOf(await sequencer.sort(files))).toEqual(['test/bench/bench-smoke.test.ts', 'test/unit/new-one.test.ts', 'test/unit/text/count-of.test.ts']);
  });

  it('names only test files that exist (a new file goes early until the table is written again)', () => {
    for (const key of Object.keys(seconds)) {
      const path = key.slice(key.indexOf(':') + 1);
      expect(existsSync(`${ROOT}/${path}`), `${key} in ${FILE_SECONDS_PATH.pathname}: run npm run test:weights`).toBe(true);
    }
  });
});
