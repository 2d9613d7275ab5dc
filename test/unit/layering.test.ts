import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findCycle } from '../helpers/find-cycle.js';
import { type RelativeImport, relativeImports } from '../helpers/relative-imports.js';

/*
 * The folder layering, checked on the imports themselves (static, type-only, re-exports and
 * dynamic `import()`):
 *
 * 1. No module sits loose at the top of src/: every file belongs to a folder named for what it
 *    does (src/planning, src/redaction…), and the command's entry point lives in src/cli/.
 * 2. No import cycle between the folders of src/. Each folder is one node, and jobs/ is one more.
 * 3. The library (src/ except src/cli/) imports neither src/cli/ nor jobs/.
 * 4. jobs/ imports only the library, never src/cli/.
 * 5. Only the composition root wires jobs: the files of COMPOSITION_ROOT below, and no other file
 *    outside jobs/, import jobs/. A new importer fails until it is added here, on purpose.
 */

/** The files allowed to import jobs/ (the export job and the nightly plan), each for its command. */
const COMPOSITION_ROOT = [
  'src/cli/nightly-command.ts', // `nightly`: plans the night with jobs/plan-night
  'src/cli/sync-slices.ts', // `run`, `nightly`, `demo`: the in-process runner attempts slices with jobs/export-slice
  'src/cli/serve-worker.ts', // `worker` (loaded once its metrics port is held): hands the jobs of jobs/ to the queue worker
];

const ROOT = new URL('../../', import.meta.url).pathname;

/** The node of the folder graph a file belongs to. */
function partOf(file: string): string {
  const parts = file.split('/');
  return parts[0] === 'jobs' ? 'jobs' : `src/${parts[1]}`;
}

const isCli = (file: string) => file.startsWith('src/cli/');
const isJobs = (file: string) => file.startsWith('jobs/');
const isLibrary = (file: string) => file.startsWith('src/') && !isCli(file);
const describeImport = (i: RelativeImport) => `${i.from}:${i.line} imports '${i.specifier}' (${i.to})`;

describe('the folder layering of src/ and jobs/', () => {
  const imports = relativeImports(ROOT, ['src', 'jobs']);

  it('reads the imports of the whole tree', () => {
    // A scan that saw nothing would pass every rule below.
    expect(new Set(imports.map((i) => i.from)).size).toBeGreaterThan(100);
    expect(imports.filter((i) => isJobs(i.to ?? '')).length).toBeGreaterThan(0);
  });

  it('resolves every relative import to a file, so none escapes the rules', () => {
    const unresolved = imports.filter((i) => i.to === null).map((i) => `${i.from}:${i.line} imports '${i.specifier}', which names no file`);
    expect(unresolved).toEqual([]);
  });

  it('keeps every module of src/ in a folder', () => {
    const loose = [...new Set(imports.map((i) => i.from))].filter((file) => file.startsWith('src/') && file.split('/').length === 2);
    expect(loose).toEqual([]);
  });

  it('has no import cycle between the top-level folders of src/ (and jobs/)', () => {
    const graph = new Map<string, Set<string>>();
    const evidence = new Map<string, RelativeImport[]>();
    for (const i of imports) {
      if (i.to === null) continue;
      const from = partOf(i.from);
      const to = partOf(i.to);
      if (from === to) continue;
      graph.set(from, (graph.get(from) ?? new Set()).add(to));
      const key = `${from} -> ${to}`;
      evidence.set(key, [...(evidence.get(key) ?? []), i]);
    }
    const cycle = findCycle(graph);
    const explained =
      cycle === null
        ? null
        : [
            `import cycle: ${cycle.join(' -> ')}`,
            ...cycle.slice(1).map((to, n) => {
              const hop = `${cycle[n]} -> ${to}`;
              return `  ${hop}:\n${(evidence.get(hop) ?? []).map((i) => `    ${describeImport(i)}`).join('\n')}`;
            }),
          ].join('\n');
    expect(explained).toBeNull();
  });

  it('keeps the library (src/ but src/cli/) from importing src/cli/ or jobs/', () => {
    const wrong = imports.filter((i) => isLibrary(i.from) && i.to !== null && (isCli(i.to) || isJobs(i.to))).map(describeImport);
    expect(wrong).toEqual([]);
  });

  it('lets jobs/ import only the library, never src/cli/', () => {
    const wrong = imports.filter((i) => isJobs(i.from) && i.to !== null && !isLibrary(i.to) && !isJobs(i.to)).map(describeImport);
    expect(wrong).toEqual([]);
  });

  it('lets only the composition root wire jobs', () => {
    const importers = new Set(imports.filter((i) => !isJobs(i.from) && i.to !== null && isJobs(i.to)).map((i) => i.from));
    const unlisted = imports.filter((i) => !isJobs(i.from) && i.to !== null && isJobs(i.to) && !COMPOSITION_ROOT.includes(i.from)).map(describeImport);
    expect(unlisted, 'add the file to COMPOSITION_ROOT only if it is an entry point that wires the job').toEqual([]);
    // An entry that no longer imports jobs/ is taken off, so the list stays the truth.
    expect(COMPOSITION_ROOT.filter((file) => !importers.has(file))).toEqual([]);
  });
});

describe('findCycle', () => {
  const graphOf = (edges: Record<string, string[]>) => new Map(Object.entries(edges).map(([from, to]) => [from, new Set(to)]));

  it('names the path of a cycle, from where it starts back to it', () => {
    expect(findCycle(graphOf({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] }))).toEqual(['a', 'b', 'c', 'a']);
    // Reached through a node outside it, the cycle is still named from its own first node.
    expect(findCycle(graphOf({ a: ['b'], b: ['c', 'd'], c: [], d: ['e'], e: ['b'] }))).toEqual(['b', 'd', 'e', 'b']);
  });

  it('finds none in a graph without one, shared dependencies (a diamond) included', () => {
    expect(findCycle(graphOf({ cli: ['auth', 'gateway'], auth: ['http'], gateway: ['http', 'auth'], http: [] }))).toBeNull();
    expect(findCycle(new Map())).toBeNull();
  });

  it('counts a self-loop as a cycle', () => {
    expect(findCycle(graphOf({ a: ['a'] }))).toEqual(['a', 'a']);
  });
});

describe('relativeImports', () => {
  const dir = mkdtempSync(join(tmpdir(), 'layering-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };

  it('sees static, type-only, re-exported and dynamic imports, resolved the NodeNext way, and nothing in comments or strings', () => {
    write('src/a.ts', '');
    write('src/b.ts', '');
    write('src/c.ts', '');
    write('src/d.mjs', '');
    write('src/cli/main.ts', '');
    write(
      'src/x/use.ts',
      [
        "import { a } from '../a.js';",
        "import type { B } from '../b.js';",
        "export { c } from '../c.js';",
        'export async function later() {',
        "  return import('../cli/main.js');",
        '}',
        "// import { gone } from '../gone.js';",
        'const text = "import \'../gone.js\'";',
        "import 'node:fs';",
        "import '../d.mjs';",
        "import '../missing.js';",
      ].join('\n'),
    );
    const found = relativeImports(dir, ['src']).map(({ line, specifier, to }) => ({ line, specifier, to }));
    expect(found).toEqual([
      { line: 1, specifier: '../a.js', to: 'src/a.ts' },
      { line: 2, specifier: '../b.js', to: 'src/b.ts' },
      { line: 3, specifier: '../c.js', to: 'src/c.ts' },
      { line: 5, specifier: '../cli/main.js', to: 'src/cli/main.ts' },
      { line: 10, specifier: '../d.mjs', to: 'src/d.mjs' },
      { line: 11, specifier: '../missing.js', to: null },
    ]);
  });
});
