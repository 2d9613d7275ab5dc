import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global set-up: builds `dist/` from the current sources (incrementally: a second or two when
 * nothing changed), so the tests that start the `report-sync` command run what would be published,
 * never a stale build.
 */
export default function buildDist(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
}
