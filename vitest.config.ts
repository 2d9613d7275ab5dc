import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/sequencer/longest-first-sequencer.js';

/**
 * The tests in tiers, one vitest project each (`npm run test:unit` and so on; `vitest run` runs them
 * all). `unit` needs no Redis, Postgres, Chromium or build: SQLite in temp files and loopback servers
 * of its own only. `integration` asks the real Redis and Postgres; `e2e`, `faults`, `ceilings` and
 * `bench` start the compiled command, so only they build `dist/` first.
 */
const BUILDS_DIST = ['test/build-dist.ts'];

/**
 * Forks for the tiers that mostly wait: on servers, on child processes (the compiled command, a
 * worker fleet, Chromium) and on timers of the product. Each file of theirs starts several
 * processes, so more forks than this put a dozen busy processes on two cores: a command that
 * starts in a tenth of a second alone then took seconds, past the bounds that tell "at once" from
 * "waited for a timeout".
 */
const WAITING_FORKS = 3;

/** A test of a waiting tier starts and stops processes, each slower on a loaded machine: its hang guard. */
const WAITING_TIMEOUT_MS = 60_000;

/**
 * Forks for the tiers that compute (unit, the benchmarks at smoke size) or that hold a process to
 * a ceiling of memory or time (ceilings): one per core, as the whole suite once ran.
 */
const COMPUTING_FORKS = 2;

// Groups run one after the other (vitest's sequence.groupOrder): first the computing tiers, then
// the ceilings, then the waiting tiers. The ceilings have a group of their own so that a ceiling
// of time is measured beside at most one other ceiling, never beside the benchmark smoke's
// simulator and worker processes, which made a dashboard answer three times slower.
const computing = { maxWorkers: COMPUTING_FORKS, sequence: { groupOrder: 0 } };
const measured = { maxWorkers: COMPUTING_FORKS, sequence: { groupOrder: 1 } };
const waiting = { maxWorkers: WAITING_FORKS, testTimeout: WAITING_TIMEOUT_MS, hookTimeout: WAITING_TIMEOUT_MS, sequence: { groupOrder: 2 } };

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxWorkers: COMPUTING_FORKS,
    // Each group's longest files first, from a committed table of past durations.
    sequence: { sequencer: LongestFirstSequencer },
    // Fails a file that leaves a server, socket, timer or child process behind.
    setupFiles: ['test/helpers/leak-check-setup.ts'],
    projects: [
      // Unit, integration, e2e and faults files share their forks' modules (no fresh module graph
      // per file): importing it anew cost more CPU than most of their tests, and what a file opens
      // (servers, clients, timers) the leak check holds it to closing. The ceilings and benchmarks
      // measure memory, so each of their files has a process of its own.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false, ...computing } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], isolate: false, ...waiting } },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], globalSetup: BUILDS_DIST, isolate: false, ...waiting } },
      { extends: true, test: { name: 'faults', include: ['test/faults/**/*.test.ts'], globalSetup: BUILDS_DIST, isolate: false, ...waiting } },
      // Peak memory and answer times of the compiled command under hostile input and a huge ledger.
      { extends: true, test: { name: 'ceilings', include: ['test/ceilings/**/*.test.ts'], globalSetup: BUILDS_DIST, ...measured } },
      { extends: true, test: { name: 'bench', include: ['test/bench/**/*.test.ts'], globalSetup: BUILDS_DIST, ...computing } },
    ],
  },
});
