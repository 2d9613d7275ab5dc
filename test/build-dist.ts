import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global set-up: builds `dist/` from the current sources, so the tests that start the
 * `report-sync` command run what would be published, never a stale build. The build is incremental
 * (a second or two when little changed), and tsc never deletes the output of a source that is gone:
 * those files are removed here, so no test can pass on a module that no longer exists.
 */
export default function buildDist(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  for (const folder of ['src', 'jobs']) {
    for (const output of walk(join(root, 'dist', folder))) {
      const copied = join(root, relative(join(root, 'dist'), output));
      if (output.endsWith('.js') && !existsSync(copied.replace(/\.js$/, '.ts')) && !existsSync(copied)) rmSync(output);
    }
  }
}

function* walk(dir: string): Generator<string> {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else yield path;
  }
}
