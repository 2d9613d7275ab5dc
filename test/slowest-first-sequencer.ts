import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each slow test file took in a full run (`test/slow-files.json`); files not listed are quick. */
const SECONDS: Readonly<Record<string, number>> = JSON.parse(readFileSync(new URL('./slow-files.json', import.meta.url), 'utf8')) as Record<string, number>;

/**
 * Starts the slowest files first, so the two forks end together. Vitest orders by its cache of
 * durations, which a fresh clone (CI) does not have: it then goes by file size, and a small file
 * that waits a long time could start last and run on alone. A stale list only balances worse.
 */
export class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const seconds = (file: TestSpecification) => SECONDS[relative(file.project.config.root, file.moduleId)] ?? 0;
    // Array sort is stable: quick files keep Vitest's order after the slow ones.
    return [...sorted].sort((a, b) => seconds(b) - seconds(a));
  }
}
