// Builds dist/: the command, bundled. Every command starts a process (a nightly, each worker, each
// status), and most of a start was Node loading hundreds of small modules one file at a time
// (Kysely and zod ship theirs as many files); one bundle loads a handful.
//
// Everything lands in dist/src/cli/ beside the entry: the shared chunks, the two worker-thread
// modules and the dashboard's assets, which the code finds beside itself (`import.meta.url`), as
// it finds them beside its sources when run through tsx. Type checking is `tsc --noEmit`'s job.
import { cpSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const OUT = 'dist/src/cli';

/**
 * Packages left to node_modules: a native module; those that read files of their own package at
 * run time (BullMQ its Lua scripts, bull-board its UI, ioredis its package.json); ioredis also
 * because BullMQ loads it from there, and one copy of a client is enough; and optional modules
 * loaded by name.
 */
const EXTERNAL = ['better-sqlite3', 'better-sqlite3-napi', 'bullmq', 'ioredis', '@bull-board/*', 'pino', 'pg-native', '@aws-sdk/client-s3'];

rmSync('dist', { recursive: true, force: true });
await build({
  entryPoints: {
    bin: 'src/cli/bin.ts',
    'zip-rows-worker': 'src/export/zip-rows-worker.ts',
    'wal-checkpoint-worker': 'src/warehouse/sqlite/wal-checkpoint-worker.ts',
  },
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  // Bundled CommonJS packages call require() for Node's own modules: give the ES modules one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning',
});
cpSync('src/dashboard/assets', `${OUT}/assets`, { recursive: true });
