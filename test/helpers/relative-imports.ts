import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** One relative import of a source file: static, type-only, re-export or dynamic `import()`. */
export interface RelativeImport {
  /** The importing file, relative to the repository root (`src/auth/password-grant.ts`). */
  readonly from: string;
  /** Line of the import in `from`, 1-based. */
  readonly line: number;
  /** The specifier as written (`../http/read-small-body.js`). */
  readonly specifier: string;
  /** The file it resolves to, relative to the root; null when no file answers to it. */
  readonly to: string | null;
}

const SOURCE_FILE = /\.(ts|mts|mjs)$/;

/**
 * Every relative import of every `.ts`/`.mts`/`.mjs` file under `folders` (relative to `root`),
 * found by the TypeScript scanner (`ts.preProcessFile`), which sees `import`, `import type`,
 * `export … from` and `import('…')` but not text in comments or strings. Package imports are left
 * out: the layering is about the repository's own folders.
 */
export function relativeImports(root: string, folders: readonly string[]): RelativeImport[] {
  const found: RelativeImport[] = [];
  for (const folder of folders) {
    for (const file of sourceFiles(join(root, folder))) {
      const text = readFileSync(file, 'utf8');
      for (const imported of ts.preProcessFile(text, true, true).importedFiles) {
        if (!imported.fileName.startsWith('.')) continue;
        found.push({
          from: relative(root, file),
          line: text.slice(0, imported.pos).split('\n').length,
          specifier: imported.fileName,
          to: resolveSpecifier(root, file, imported.fileName),
        });
      }
    }
  }
  return found;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder)
    .sort()
    .flatMap((name) => {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) return sourceFiles(path);
      return SOURCE_FILE.test(name) ? [path] : [];
    });
}

/** NodeNext resolution as the code uses it: `./x.js` names `./x.ts`; `./x.ts` and `./x.mjs` name themselves. */
function resolveSpecifier(root: string, file: string, specifier: string): string | null {
  const target = resolve(dirname(file), specifier);
  const candidates = [target, target.replace(/\.js$/, '.ts'), target.replace(/\.mjs$/, '.mts')];
  const hit = candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
  return hit === undefined ? null : relative(root, hit);
}
