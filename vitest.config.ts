import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/build-dist.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // e2e tests start servers and SQLite files of their own; two cores, so two forks.
    pool: 'forks',
    maxWorkers: 2,
    // Fails a file that leaves a server, socket, timer or child process behind.
    setupFiles: ['test/helpers/leak-check-setup.ts'],
  },
});
