import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { WAREHOUSE_ENGINES } from '../../src/warehouse/engines.js';
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
 * 6. One engine per warehouse dialect: nothing outside the dialect folders (src/warehouse/<dialect>/,
 *    one per registered engine) asks which dialect it has (`instanceof` of a dialect's class, a
 *    comparison or `switch` on the dialect), and only the registry (src/warehouse/engines.ts)
 *    imports a dialect folder, which imports no other dialect's.
 * 7. No import cycle between the parts of src/warehouse/: each sub-folder is one node, and the files
 *    at its top (the registry and the opening of a warehouse) are one more. The vocabulary every
 *    part speaks (src/warehouse/engine/) imports no other part.
 */

/** The files allowed to import jobs/ (the export job and the nightly plan), each for its command. */
const COMPOSITION_ROOT = [
  'src/cli/nightly-command.ts', // `nightly`: plans the night with jobs/plan-night
  'src/cli/sync-slices.ts', // `run`, `nightly`, `demo`: the in-process runner attempts slices with jobs/export-slice
  'src/cli/serve-worker.ts', // `worker` (loaded once its metrics port is held): hands the jobs of jobs/ to the queue worker
];

const ROOT = new URL('../../', import.meta.url).pathname;

/** A temporary source tree for planting violations, removed after the suite that made it. */
function plantedTree(prefix: string): { dir: string; write: (path: string, text: string) => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  return { dir, write };
}

/** The one module outside the dialect folders that may import them. */
const ENGINE_REGISTRY = 'src/warehouse/engines.ts';
const ENGINE_DIALECTS = WAREHOUSE_ENGINES.map((engine) => engine.dialect);
const dialectFolders = (dialects: readonly string[]) => dialects.map((dialect) => `src/warehouse/${dialect}/`);

/**
 * The imports of a dialect folder's modules from outside it, but the registry's: a dialect folder
 * is the engine's, reached through `WarehouseEngine` only.
 */
function dialectFolderImports(imports: readonly RelativeImport[], dialects: readonly string[]): string[] {
  return imports
    .filter((i) => {
      const folder = dialectFolders(dialects).find((candidate) => i.to?.startsWith(candidate));
      return folder !== undefined && i.from !== ENGINE_REGISTRY && !i.from.startsWith(folder);
    })
    .map(describeImport);
}

/** The node of the folder graph a file belongs to. */
function partOf(file: string): string {
  const parts = file.split('/');
  return parts[0] === 'jobs' ? 'jobs' : `src/${parts[1]}`;
}

/**
 * The node of src/warehouse's graph a file belongs to: its sub-folder (`src/warehouse/ledger`), or
 * WAREHOUSE_TOP for the files at the top; null outside src/warehouse/.
 */
function warehousePartOf(file: string): string | null {
  const parts = file.split('/');
  if (parts[0] !== 'src' || parts[1] !== 'warehouse') return null;
  return parts.length === 3 ? WAREHOUSE_TOP : `src/warehouse/${parts[2]}`;
}

/** The files at the top of src/warehouse/: the registry of engines and the opening of a warehouse. */
const WAREHOUSE_TOP = 'src/warehouse/*.ts';
const WAREHOUSE_VOCABULARY = 'src/warehouse/engine';

/** The graph of the parts `part` names (null: left out), and the imports behind each edge. */
function partGraph(imports: readonly RelativeImport[], part: (file: string) => string | null) {
  const graph = new Map<string, Set<string>>();
  const evidence = new Map<string, RelativeImport[]>();
  for (const i of imports) {
    if (i.to === null) continue;
    const from = part(i.from);
    const to = part(i.to);
    if (from === null || to === null || from === to) continue;
    graph.set(from, (graph.get(from) ?? new Set()).add(to));
    const key = `${from} -> ${to}`;
    evidence.set(key, [...(evidence.get(key) ?? []), i]);
  }
  return { graph, evidence };
}

/** A cycle of the graph, with the imports that make each hop of it; null when there is none. */
function explainedCycle({ graph, evidence }: ReturnType<typeof partGraph>): string | null {
  const cycle = findCycle(graph);
  if (cycle === null) return null;
  return [
    `import cycle: ${cycle.join(' -> ')}`,
    ...cycle.slice(1).map((to, n) => {
      const hop = `${cycle[n]} -> ${to}`;
      return `  ${hop}:\n${(evidence.get(hop) ?? []).map((i) => `    ${describeImport(i)}`).join('\n')}`;
    }),
  ].join('\n');
}

/** The imports of src/warehouse/engine/ from another part of the warehouse: the bottom imports none. */
function vocabularyImports(imports: readonly RelativeImport[]): string[] {
  return imports
    .filter((i) => warehousePartOf(i.from) === WAREHOUSE_VOCABULARY && i.to !== null && ![null, WAREHOUSE_VOCABULARY].includes(warehousePartOf(i.to)))
    .map(describeImport);
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
    expect(explainedCycle(partGraph(imports, partOf))).toBeNull();
  });

  it('has no import cycle between the parts of src/warehouse/, and its vocabulary imports none of them', () => {
    const parts = partGraph(imports, warehousePartOf);
    // A graph that missed a part would pass by leaving its edges out.
    expect([...parts.graph.keys()]).toEqual(
      expect.arrayContaining([
        WAREHOUSE_TOP,
        'src/warehouse/schema',
        'src/warehouse/ledger',
        'src/warehouse/loading',
        ...dialectFolders(ENGINE_DIALECTS).map((f) => f.slice(0, -1)),
      ]),
    );
    expect(explainedCycle(parts), 'a lower part is handed what it needs (the engine, a handle) rather than importing the part above').toBeNull();
    expect(vocabularyImports(imports), 'src/warehouse/engine/ is the bottom: the words every part speaks, importing none of them').toEqual([]);
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

describe('one engine per warehouse dialect', () => {
  it('reads the registry: a folder per engine', () => {
    // An empty list would pass both rules below; a new dialect adds itself here through the registry.
    expect(ENGINE_DIALECTS).toEqual(expect.arrayContaining(['sqlite', 'postgres']));
    for (const folder of dialectFolders(ENGINE_DIALECTS)) expect(statSync(join(ROOT, folder)).isDirectory()).toBe(true);
  });

  it('asks no code outside the dialect folders which dialect it has', () => {
    const branches = dialectBranches(ROOT, { folders: ['src', 'jobs'], allowedFolders: dialectFolders(ENGINE_DIALECTS), dialects: ENGINE_DIALECTS });
    expect(
      branches.map((branch) => `${branch.file}:${branch.line}: ${branch.text}`),
      'ask the engine (WarehouseHandle.engine) instead; a new difference is a new WarehouseEngine member',
    ).toEqual([]);
  });

  it('lets only the registry import a dialect folder, and no dialect folder another', () => {
    expect(dialectFolderImports(relativeImports(ROOT, ['src', 'jobs']), ENGINE_DIALECTS)).toEqual([]);
  });

  describe('on planted violations', () => {
    const { dir, write } = plantedTree('layering-dialects-');
    write('src/warehouse/sqlite/sqlite-engine.ts', 'export const sqliteEngine = {};\nexport const same = (x: unknown) => x instanceof SqliteIntrospector;\n');
    write('src/warehouse/sqlite/sqlite-clock.ts', "import { sqliteEngine } from './sqlite-engine.js';\nexport const inFolder = sqliteEngine;\n");
    write('src/warehouse/postgres/postgres-engine.ts', "import { sqliteEngine } from '../sqlite/sqlite-engine.js';\nexport const postgresEngine = sqliteEngine;\n");
    write(
      'src/warehouse/engines.ts',
      "import { sqliteEngine } from './sqlite/sqlite-engine.js';\nimport { postgresEngine } from './postgres/postgres-engine.js';\nexport const ENGINES = [sqliteEngine, postgresEngine];\n",
    );
    write(
      'src/warehouse/ledger/ledger.ts',
      [
        "import { PostgresIntrospector } from 'kysely';",
        "import { sqliteEngine } from '../sqlite/sqlite-engine.js';",
        'declare const db: { introspection: unknown };',
        'declare const warehouse: { dialect: string; engine: { dialect: string } };',
        'export const a = db.introspection instanceof PostgresIntrospector;',
        "export const b = warehouse.dialect === 'sqlite';",
        "export const c = warehouse.engine.dialect !== 'postgres';",
        "export const d = 'POSTGRES' == String(warehouse);",
        'export function e(dialect: string) {',
        '  switch (dialect) {',
        '    default:',
        '      return sqliteEngine;',
        '  }',
        '}',
        "export const f = (kind: string) => { switch (kind) { case 'sqlite': return 1; default: return 0; } };",
        'export const g = (pool: unknown) => pool instanceof pg.Pool;',
        "// warehouse.dialect === 'postgres' and x instanceof PostgresIntrospector, in a comment",
        'export const h = "warehouse.dialect === \'postgres\'";',
        'export const i = db instanceof Error;',
        'export const j = warehouse.engine.dialect;',
      ].join('\n'),
    );

    it('finds each way of asking for the dialect, and nothing in comments, strings or the dialect folders', () => {
      const found = dialectBranches(dir, { folders: ['src'], allowedFolders: dialectFolders(['sqlite', 'postgres']), dialects: ['sqlite', 'postgres'] });
      expect(found.map(({ file, line }) => `${file}:${line}`)).toEqual([
        'src/warehouse/ledger/ledger.ts:5',
        'src/warehouse/ledger/ledger.ts:6',
        'src/warehouse/ledger/ledger.ts:7',
        'src/warehouse/ledger/ledger.ts:8',
        'src/warehouse/ledger/ledger.ts:10',
        'src/warehouse/ledger/ledger.ts:15',
        'src/warehouse/ledger/ledger.ts:16',
      ]);
    });

    it('finds a dialect folder imported from outside it but by the registry, and one dialect importing another', () => {
      expect(dialectFolderImports(relativeImports(dir, ['src']), ['sqlite', 'postgres'])).toEqual([
        "src/warehouse/ledger/ledger.ts:2 imports '../sqlite/sqlite-engine.js' (src/warehouse/sqlite/sqlite-engine.ts)",
        "src/warehouse/postgres/postgres-engine.ts:1 imports '../sqlite/sqlite-engine.js' (src/warehouse/sqlite/sqlite-engine.ts)",
      ]);
    });
  });
});

describe('the parts of src/warehouse/, on planted violations', () => {
  const { dir, write } = plantedTree('layering-warehouse-');
  write('src/warehouse/engines.ts', "import { sqliteEngine } from './sqlite/sqlite-engine.js';\nexport const ENGINES = [sqliteEngine];\n");
  write('src/warehouse/sqlite/sqlite-engine.ts', "import type { Ledger } from '../ledger/ledger.js';\nexport const sqliteEngine = {} as Ledger;\n");
  write('src/warehouse/ledger/ledger.ts', "import { ENGINES } from '../engines.js';\nexport class Ledger {}\nexport const engines = ENGINES;\n");
  write('src/warehouse/engine/warehouse-engine.ts', "import type { Ledger } from '../ledger/ledger.js';\nexport type Engine = Ledger;\n");
  write('src/other/user.ts', "import { Ledger } from '../warehouse/ledger/ledger.js';\nexport const ledger = new Ledger();\n");

  it('names the circle, through the top-level files as one part, with the imports that make it', () => {
    expect(explainedCycle(partGraph(relativeImports(dir, ['src']), warehousePartOf))).toBe(
      [
        'import cycle: src/warehouse/*.ts -> src/warehouse/sqlite -> src/warehouse/ledger -> src/warehouse/*.ts',
        '  src/warehouse/*.ts -> src/warehouse/sqlite:',
        "    src/warehouse/engines.ts:1 imports './sqlite/sqlite-engine.js' (src/warehouse/sqlite/sqlite-engine.ts)",
        '  src/warehouse/sqlite -> src/warehouse/ledger:',
        "    src/warehouse/sqlite/sqlite-engine.ts:1 imports '../ledger/ledger.js' (src/warehouse/ledger/ledger.ts)",
        '  src/warehouse/ledger -> src/warehouse/*.ts:',
        "    src/warehouse/ledger/ledger.ts:1 imports '../engines.js' (src/warehouse/engines.ts)",
      ].join('\n'),
    );
  });

  it('finds the vocabulary importing a part above it', () => {
    expect(vocabularyImports(relativeImports(dir, ['src']))).toEqual(["src/warehouse/engine/warehouse-engine.ts:1 imports '../ledger/ledger.js' (src/warehouse/ledger/ledger.ts)"]);
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
  const { dir, write } = plantedTree('layering-');

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

/** A place in a source file that asks which warehouse dialect it has. */
interface DialectBranch {
  /** The file, relative to the root (`src/warehouse/ledger/ledger.ts`). */
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  /** The code, as written. */
  readonly text: string;
}

/**
 * Classes whose `instanceof` tells a dialect: Kysely's (`PostgresIntrospector`, `SqliteDialect`…),
 * the engines' own (`SqliteSliceLock`…) and the drivers' (`pg.Pool`, `PgClient`, `MysqlPool`…).
 */
const DIALECT_CLASS = /^(Postgres|Postgresql|Sqlite|SQLite|Pg|Mysql|MySql|MySQL|Mssql)[A-Z]?\w*$/;

/**
 * Every place under `folders` (relative to `root`) outside `allowedFolders` that branches on the
 * warehouse dialect: `instanceof` of a dialect class, a comparison (`===`, `!==`, `==`, `!=`) of a
 * `dialect` value or of a dialect's name (one of `dialects`, as a string), and a `switch` on a
 * `dialect` value or with a case of a dialect's name. Read from TypeScript syntax trees, so comments
 * and text inside strings are never taken for code.
 */
function dialectBranches(
  root: string,
  options: { readonly folders: readonly string[]; readonly allowedFolders: readonly string[]; readonly dialects: readonly string[] },
): DialectBranch[] {
  const names = new Set(options.dialects.map((name) => name.toLowerCase()));
  const isDialectName = (node: ts.Node) => (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && names.has(node.text.toLowerCase());
  const isDialectValue = (node: ts.Node): boolean => {
    const inner = ts.isParenthesizedExpression(node) ? node.expression : node;
    if (ts.isIdentifier(inner)) return /^dialect$/i.test(inner.text);
    if (ts.isPropertyAccessExpression(inner)) return /^dialect$/i.test(inner.name.text);
    if (ts.isElementAccessExpression(inner)) return isDialectName(inner.argumentExpression) || /['"]dialect['"]/.test(inner.argumentExpression.getText());
    return false;
  };
  const isDialectClass = (node: ts.Node): boolean => {
    if (ts.isIdentifier(node)) return DIALECT_CLASS.test(node.text);
    if (ts.isPropertyAccessExpression(node))
      return DIALECT_CLASS.test(node.name.text) || (ts.isIdentifier(node.expression) && /^(pg|mysql|mysql2|sqlite3?|Database)$/.test(node.expression.text));
    return false;
  };
  const found: DialectBranch[] = [];
  for (const folder of options.folders) {
    for (const path of dialectSourceFiles(join(root, folder))) {
      const file = relative(root, path).split('\\').join('/');
      if (options.allowedFolders.some((allowed) => file.startsWith(allowed.endsWith('/') ? allowed : `${allowed}/`))) continue;
      const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
      const report = (node: ts.Node) => found.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.getText() });
      const visit = (node: ts.Node): void => {
        if (ts.isBinaryExpression(node)) {
          const operator = node.operatorToken.kind;
          if (operator === ts.SyntaxKind.InstanceOfKeyword && isDialectClass(node.right)) report(node);
          const comparison =
            operator === ts.SyntaxKind.EqualsEqualsEqualsToken ||
            operator === ts.SyntaxKind.ExclamationEqualsEqualsToken ||
            operator === ts.SyntaxKind.EqualsEqualsToken ||
            operator === ts.SyntaxKind.ExclamationEqualsToken;
          if (comparison && [node.left, node.right].some((side) => isDialectValue(side) || isDialectName(side))) report(node);
        }
        if (ts.isSwitchStatement(node)) {
          const onDialect = isDialectValue(node.expression) || node.caseBlock.clauses.some((clause) => ts.isCaseClause(clause) && isDialectName(clause.expression));
          if (onDialect) report(node.expression);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  return found;
}

function dialectSourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) files.push(...dialectSourceFiles(path));
    else if (/\.(ts|mts)$/.test(entry) && !entry.endsWith('.d.ts')) files.push(path);
  }
  return files;
}
