import { relative } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { findLeftovers, type ResourceSnapshot, runningChildren, takeSettledSnapshot } from './leak-check.js';

/*
 * Every test file (a setupFiles entry of vitest.config.ts) fails if it leaves behind what keeps a
 * process alive: a server, a socket, a timer, a child process. The snapshot is taken in a hook
 * registered before the file's own, and compared in an afterAll that runs after all of the file's
 * (vitest runs after-hooks in reverse order of registration), so what the file's own cleanup closes
 * is closed by then.
 */

/** How long leftovers get to end on their own (sockets closing after their server, children exiting after a signal). */
const GRACE_MS = 2_000;

let before: ResourceSnapshot | undefined;

beforeAll(async () => {
  before = await takeSettledSnapshot(1_000);
});

afterAll(async () => {
  if (before === undefined) return;
  const leftovers = await findLeftovers(before, GRACE_MS);
  if (leftovers.length === 0) return;
  // A leaked child would outlive the test run (and hold a port or a database): end it after saying so.
  for (const pid of runningChildren(process.pid).keys()) {
    if (before.children.has(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // It ended meanwhile.
    }
  }
  const file = relative(process.cwd(), expect.getState().testPath ?? 'this test file');
  throw new Error(`${file} left behind, ${GRACE_MS / 1000} s after its last test and hook:\n  ${leftovers.join('\n  ')}`);
}, GRACE_MS + 5_000);
