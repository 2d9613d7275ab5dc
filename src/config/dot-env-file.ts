import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import type { SyncErrorCode } from '../errors/sync-error.js';

/**
 * A dotenv rule that made a variable's value differ from its line: an unquoted `#` glued to the
 * text cut it (`comment`); text after the closing quote was dropped; an unclosed quote was kept;
 * the quote closed on a later line (`multi-line`); or `\n` in double quotes became a line break.
 */
export type DotEnvRule = 'comment' | 'text-after-quote' | 'unclosed-quote' | 'multi-line' | 'line-break-escape';

/** Where a `.env` value was changed by a rule, and which; never the value itself. */
export interface DotEnvNote {
  /** 1-based, as an editor counts lines. */
  readonly line: number;
  readonly variable: string;
  readonly rule: DotEnvRule;
}

export interface DotEnvFile {
  readonly values: Record<string, string>;
  /** The 1-based line of each variable's (last) definition, so that a bad value can be pointed at. */
  readonly lines: Readonly<Record<string, number>>;
  /** One per variable whose (last) definition a rule changed, in file order. */
  readonly notes: readonly DotEnvNote[];
}

const QUOTES = new Set(['"', "'", '`']);

/**
 * The codes under which a changed value may be the reason: the upstream refused what it was sent
 * (credentials, or the tenant id the gateway answers 403 to).
 */
const REFUSAL_CODES: ReadonlySet<string> = new Set<SyncErrorCode>(['AUTH_REJECTED', 'EXPORT_UNAUTHORIZED', 'EXPORT_FORBIDDEN']);

/** Only report-sync's own names are ever printed: a malformed line's "name" could hold part of a value. */
const REPORT_VARIABLE = /^REPORT_[A-Z0-9_]+$/;

const RULE_TEXT: Record<DotEnvRule, string> = {
  comment: 'has a # outside quotes, which starts a comment, so the value was cut there: put the value in single quotes if the # belongs to it',
  'text-after-quote': 'has text after the closing quote, which was dropped: if the value holds that quote, enclose it in another kind (single, double or backtick)',
  'unclosed-quote': 'opens a quote it never closes, so the quote became part of the value: close it, or drop it',
  'multi-line': 'opens a quote that closes only on a later line, so the value runs over several lines: close the quote on the same line',
  'line-break-escape': 'is in double quotes, where \\n stands for a line break: use single quotes if the backslash belongs to the value',
};

/**
 * Reads a `.env` file by the dotenv rules (node's `parseEnv`): a BOM is ignored, CRLF and lone CR
 * end lines, `export ` and blanks around `=` are allowed. Notes each value a rule changed, so a
 * refused password can point at its line instead of blaming the credentials.
 */
export function readDotEnvFile(path: string): DotEnvFile {
  const { text, notes, lines } = canonicalise(readFileSync(path, 'utf8'));
  return { values: parseEnv(text) as Record<string, string>, notes, lines };
}

/**
 * The hint to add to an error under `code` when a `.env` rule changed a `REPORT_*` variable, or
 * undefined. Only for a refusal (`AUTH_REJECTED`, `EXPORT_UNAUTHORIZED`, `EXPORT_FORBIDDEN`): a value
 * cut at `#` may be meant, so it is not worth a warning until the upstream refuses it.
 */
export function dotEnvHint(notes: readonly DotEnvNote[], code: string | undefined): string | undefined {
  if (!code || !REFUSAL_CODES.has(code)) return undefined;
  const relevant = notes.filter((note) => REPORT_VARIABLE.test(note.variable));
  if (relevant.length === 0) return undefined;
  return relevant.map((note) => `.env line ${note.line} (${note.variable}) ${RULE_TEXT[note.rule]}`).join('; ');
}

/**
 * The file in the plain shape every supported node's `parseEnv` reads alike (versions differ on
 * BOMs, lone CRs, `export`, tabs before quotes, indented comments and an unterminated last line),
 * with notes on the rules that changed a value. Lines are rewritten, never added or removed, so
 * line numbers hold.
 */
function canonicalise(raw: string): { text: string; notes: DotEnvNote[]; lines: Record<string, number> } {
  const lines = raw.replace(/^\uFEFF/, '').split(/\r\n?|\n/);
  const found: DotEnvNote[] = [];
  const lastDefinition = new Map<string, number>();
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) {
      lines[index] = '';
      continue;
    }
    const equals = line.indexOf('=');
    if (equals < 0) continue;
    const variable = line
      .slice(0, equals)
      .trim()
      .replace(/^export\s+/, '');
    if (variable === '') continue;
    const written = line.slice(equals + 1);
    const value = written.replace(/^[ \t]+/, '');
    lines[index] = `${variable}=${value}`;
    lastDefinition.set(variable, index + 1);
    const note = (rule: DotEnvRule) => found.push({ line: index + 1, variable, rule });

    const quote = value[0];
    if (quote === undefined || !QUOTES.has(quote)) {
      // Every unquoted # cuts, but ` # …` after a blank is how comments are written; a # glued to
      // the text before it (`abc#123`, or `=#abc`) is almost always part of a password.
      if (/(^|[^ \t])#/.test(written)) note('comment');
      continue;
    }
    const close = value.indexOf(quote, 1);
    if (close >= 0) {
      const after = value.slice(close + 1).trim();
      if (after !== '' && !after.startsWith('#')) note('text-after-quote');
      else if (quote === '"' && value.slice(1, close).includes('\\n')) note('line-break-escape');
      continue;
    }
    // The parser looks for the closing quote across lines: the lines up to it belong to this value.
    const closingLine = lines.findIndex((later, laterIndex) => laterIndex > index && later.includes(quote));
    if (closingLine < 0) {
      note('unclosed-quote');
      continue;
    }
    note('multi-line');
    index = closingLine;
  }
  // A redefined variable takes its last value: notes on the lines it replaced would mislead.
  const notes = found.filter((note) => lastDefinition.get(note.variable) === note.line);
  return { text: `${lines.join('\n')}\n`, notes, lines: Object.fromEntries(lastDefinition) };
}
