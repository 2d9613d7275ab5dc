import { defineConfig } from 'vitest/config';

/**
 * The tests in tiers, one vitest project each (`npm run test:unit` and so on; `vitest run` runs them
 * all). `unit` needs no Redis, Postgres, Chromium or build: SQLite in temp files and loopback servers
 * of its own only. `integration` asks the real Redis and Postgres; `e2e`, `faults` and `bench` start
 * the compiled command, so only they build `dist/` first.
 */
const BUILDS_DIST = ['test/build-dist.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // e2e tests start servers and SQLite files of their own; two cores, so two forks.
    pool: 'forks',
    maxWorkers: 2,
    // Fails a file that leaves a server, socket, timer or child process behind.
    setupFiles: ['test/helpers/leak-check-setup.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'] } },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], globalSetup: BUILDS_DIST } },
      { extends: true, test: { name: 'faults', include: ['test/faults/**/*.test.ts'], globalSetup: BUILDS_DIST } },
      { extends: true, test: { name: 'bench', include: ['test/bench/**/*.test.ts'], globalSetup: BUILDS_DIST } },
    ],
  },
});
