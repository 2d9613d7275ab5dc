import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each test file took in a full run, by `project:path` (written by `npm run test:weights`). */
export const FILE_SECONDS_PATH = new URL('./file-seconds.json', import.meta.url);

/** What a file not in the table is taken to last: long enough to start early, where a long new file belongs. */
const UNKNOWN_FILE_SECONDS = 30;

/** The key of a file in the table: its project and its path from the root. */
export function fileKey(project: string, path: string): string {
  return `${project}:${path}`;
}

/**
 * Runs the longest files of each group first, across its projects. A group's forks each take the
 * next file as they finish one, so a long file left to the end ran alone while the other forks had
 * nothing to do. vitest's own order puts projects one after the other and, on a clean clone (as in
 * CI) with no results cached, larger files first; the table of past durations is committed so that
 * every clone starts with it.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = readSeconds();
    const root = this.ctx.config.root;
    const expected = (spec: TestSpecification) => seconds[fileKey(spec.project.name, relative(root, spec.moduleId))] ?? UNKNOWN_FILE_SECONDS;
    return [...files].sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || expected(b) - expected(a));
  }
}

function readSeconds(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(FILE_SECONDS_PATH, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}
