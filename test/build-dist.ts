import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global set-up: builds `dist/` from the current sources, so the tests that start the
 * `report-sync` command run what would be published, never a stale build. The build starts from
 * an empty `dist/` (scripts/build.mjs), so no test can pass on a module that no longer exists.
 * Several projects (e2e, faults, ceilings, bench) name this set-up; a mark in the environment of
 * vitest's main process makes one `vitest run` build once.
 */
export default function buildDist(): void {
  if (process.env[BUILT_MARK] === '1') return;
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  process.env[BUILT_MARK] = '1';
}

/** Set once this run of vitest has built `dist/`. */
const BUILT_MARK = 'REPORT_SYNC_TEST_DIST_BUILT';
