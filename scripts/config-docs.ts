import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { settingVariables } from '../src/config/setting-variables.js';
import { settingsSchema } from '../src/config/settings-schema.js';

/**
 * `npm run docs:config`: rewrites the settings table of docs/configuration.md (between the
 * settings markers) from the settings schema, so the page cannot drift from the code. Each row's
 * meaning is the JSDoc comment above the key in settings-schema.ts, read with the TypeScript
 * compiler (the comments are gone at run time); its default is what the schema gives an empty
 * file; its variable is the one environment-settings.ts reads.
 */
export const CONFIGURATION_PAGE = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
const SCHEMA_FILE = fileURLToPath(new URL('../src/config/settings-schema.ts', import.meta.url));
export const START = '<!-- settings:start -->';
export const END = '<!-- settings:end -->';

/** One key of the schema whose value is not itself a group of settings. */
export interface DocumentedSetting {
  readonly path: readonly string[];
  /** The JSDoc text on one line, tags left out. */
  readonly meaning: string;
  /** The `@defaultValue` tag's text, when the comment has one. */
  readonly statedDefault: string | undefined;
  /** Kept in the schema only so that old configurations still start (`retiredSetting`). */
  readonly retired: boolean;
}

/** Every setting of settings-schema.ts with its JSDoc, in the schema's order; fails naming each key without one. */
export function documentedSettings(source: string = readFileSync(SCHEMA_FILE, 'utf8')): DocumentedSetting[] {
  const file = ts.createSourceFile(SCHEMA_FILE, source, ts.ScriptTarget.ES2022, true);
  let root: ts.ObjectLiteralExpression | undefined;
  file.forEachChild((statement) => {
    if (!ts.isVariableStatement(statement)) return;
    for (const declaration of statement.declarationList.declarations)
      if (ts.isIdentifier(declaration.name) && declaration.name.text === 'settingsSchema' && declaration.initializer) root = objectShape(declaration.initializer);
  });
  if (!root) throw new Error(`${SCHEMA_FILE}: no settingsSchema = z.object({ … }) found`);

  const out: DocumentedSetting[] = [];
  const missing: string[] = [];
  const visit = (shape: ts.ObjectLiteralExpression, path: readonly string[]): void => {
    for (const property of shape.properties) {
      if (!ts.isPropertyAssignment(property)) throw new Error(`${SCHEMA_FILE}: ${[...path, property.getText()].join('.')} is not a plain key: value`);
      const key = ts.isIdentifier(property.name) || ts.isStringLiteral(property.name) ? property.name.text : property.name.getText();
      const keyPath = [...path, key];
      const nested = objectShape(property.initializer);
      if (nested) {
        visit(nested, keyPath);
        continue;
      }
      const doc = jsDocOf(property);
      if (!doc.meaning) missing.push(keyPath.join('.'));
      out.push({
        path: keyPath,
        meaning: doc.meaning,
        statedDefault: doc.statedDefault,
        retired: ts.isIdentifier(property.initializer) && property.initializer.text === 'retiredSetting',
      });
    }
  };
  visit(root, []);
  if (missing.length > 0) throw new Error(`settings without a JSDoc comment in src/config/settings-schema.ts (write what each means above its key): ${missing.join(', ')}`);
  return out;
}

/** The object literal of the `z.object({ … })` an initializer is built on, if it is one. */
function objectShape(expression: ts.Expression): ts.ObjectLiteralExpression | undefined {
  let found: ts.ObjectLiteralExpression | undefined;
  const search = (node: ts.Node): void => {
    if (found) return;
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'object') {
      const argument = node.arguments[0];
      if (argument && ts.isObjectLiteralExpression(argument)) {
        found = argument;
        return;
      }
    }
    // Down the call chain only (`z.object({…}).strict().prefault({})`), never into an argument's values.
    if (ts.isCallExpression(node)) search(node.expression);
    else if (ts.isPropertyAccessExpression(node)) search(node.expression);
  };
  search(expression);
  return found;
}

function jsDocOf(node: ts.Node): { meaning: string; statedDefault: string | undefined } {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const doc = docs.at(-1);
  if (!doc) return { meaning: '', statedDefault: undefined };
  const meaning = oneLine(ts.getTextOfJSDocComment(doc.comment) ?? '');
  const tag = doc.tags?.find((candidate) => candidate.tagName.text === 'defaultValue');
  return { meaning, statedDefault: tag ? oneLine(ts.getTextOfJSDocComment(tag.comment) ?? '') : undefined };
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

/** The settings table: one row per setting, retired ones marked so. */
export function settingsTable(settings: readonly DocumentedSetting[] = documentedSettings()): string {
  const defaults = settingsSchema.parse({}) as Record<string, unknown>;
  const variables = settingVariables();
  const documented = new Set(settings.map((setting) => setting.path.join('.')));
  for (const variable of variables) {
    if (!settings.some((setting) => startsWith(variable.path, setting.path)))
      throw new Error(`${variable.name} (${variable.path.join('.')}) has no key in the settings schema's source: is it declared outside z.object({ … })?`);
  }
  const rows = settings.map((setting) => {
    const key = setting.path.join('.');
    const own = variables.filter((variable) => startsWith(variable.path, setting.path));
    const exact = own.find((variable) => variable.path.length === setting.path.length);
    // A record keyed by report type (`formats`) has a variable per key: name the pattern and one example.
    const variable = exact
      ? code(exact.name)
      : `${code(`${own[0]?.name.slice(0, own[0].name.lastIndexOf('__') + 2) ?? ''}<TYPE>`)} (${code(own.find((one) => one.path.at(-1) === 'constituent.close')?.name ?? own[0]?.name ?? '')}…)`;
    const value = valueAt(defaults, setting.path);
    if (!setting.retired && value === undefined) throw new Error(`${key} has no default in the settings schema`);
    if (setting.statedDefault !== undefined && !setting.retired) checkStatedDefault(key, setting.statedDefault, value);
    const shown = setting.retired ? 'retired' : defaultText(setting.path, value);
    return `| ${code(key)} | ${variable} | ${shown} | ${cell(setting.meaning)} |`;
  });
  if (documented.size !== settings.length) throw new Error('a setting is declared twice in the settings schema');
  return ['| key | variable | default | meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** The page with its settings table rewritten; fails if the markers are missing. */
export function configurationPage(page: string, table: string = settingsTable()): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/configuration.md has no ${START} … ${END} markers: put them where the settings table goes`);
  return `${page.slice(0, start + START.length)}\n\n${table}\n\n${page.slice(end)}`;
}

function startsWith(path: readonly string[], prefix: readonly string[]): boolean {
  return prefix.every((segment, index) => path[index] === segment);
}

function valueAt(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const segment of path) current = (current as Record<string, unknown> | undefined)?.[segment];
  return current;
}

/** `@defaultValue 30000` or `@defaultValue 1048576 (1 MiB)` must name the default the schema gives. */
function checkStatedDefault(key: string, stated: string, value: unknown): void {
  const first = stated.split(/\s+/)[0] ?? '';
  if (first !== JSON.stringify(value) && first !== String(value))
    throw new Error(`${key}: its comment's @defaultValue says ${first}, the schema gives ${JSON.stringify(value)}; correct the comment`);
}

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'];

/** JSON, with sizes in bytes also in binary units (`2147483648` (2 GiB)). */
function defaultText(path: readonly string[], value: unknown): string {
  const json = code(JSON.stringify(value).replaceAll(',', ', ').replaceAll('":', '": '));
  if (!/Bytes$/.test(path.at(-1) ?? '') || typeof value !== 'number' || value < 1024) return json;
  let size = value;
  let unit = -1;
  while (size >= 1024 && size % 1024 === 0 && unit < UNITS.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return unit >= 0 && Number.isInteger(size) ? `${json} (${size} ${UNITS[unit]})` : json;
}

const code = (text: string): string => `\`${text}\``;

/** A table cell: a `|` would end the cell. */
const cell = (text: string): string => text.replaceAll('|', '\\|');

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
    const next = configurationPage(page);
    if (next === page) console.error('docs/configuration.md is up to date');
    else {
      writeFileSync(CONFIGURATION_PAGE, next);
      console.error('docs/configuration.md settings table rewritten from src/config/settings-schema.ts');
    }
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
