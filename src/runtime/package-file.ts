import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The path of a file shipped with report-sync (`package.json`, `config/default.json`), relative to
 * the package's root: the nearest folder above this module holding a `package.json`. The same code
 * runs from `src/` (tests, tsx) and from `dist/src/` (the published command), one level deeper.
 */
export function packageFile(relativePath: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`report-sync's package.json was not found above ${fileURLToPath(import.meta.url)}: the installation is incomplete`);
    dir = parent;
  }
  return join(dir, relativePath);
}
