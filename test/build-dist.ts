import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global set-up: builds `dist/` from the current sources, so the tests that start the
 * `report-sync` command run what would be published, never a stale build. The build is incremental
 * (a second or two when little changed), and tsc never deletes the output of a source that is gone:
 * those files are removed here, so no test can pass on a module that no longer exists. Several
 * projects (e2e, faults, bench) name this set-up; a mark in the environment of vitest's main
 * process makes one `vitest run` build once.
 */
export default function buildDist(): void {
  if (process.env[BUILT_MARK] === '1') return;
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  for (const folder of ['src', 'jobs']) {
    for (const output of walk(join(root, 'dist', folder))) {
      const copied = join(root, relative(join(root, 'dist'), output));
      if (output.endsWith('.js') && !existsSync(copied.replace(/\.js$/, '.ts')) && !existsSync(copied)) rmSync(output);
    }
  }
  process.env[BUILT_MARK] = '1';
}

/** Set once this run of vitest has built `dist/`. */
const BUILT_MARK = 'REPORT_SYNC_TEST_DIST_BUILT';

function* walk(dir: string): Generator<string> {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else yield path;
  }
}
