import type { RowValues } from '../../extract/row-builder.js';

const ESCAPED = /\\([\\tnr])/g;
const UNESCAPES: Readonly<Record<string, string>> = { '\\': '\\', t: '\t', n: '\n', r: '\r' };

/**
 * The rows of whole lines of COPY text as {@link copyTextRow} wrote them with `lineEnd`, each as its
 * values without what `lineEnd` added (the load's `load_id`): `\N` is NULL, the four escapes are
 * their characters again, and every other value is its text (numbers too, as the database reads
 * them). For a writer that was handed rows already written as COPY text and must bind them as
 * parameters instead (MySQL when the server takes no local files).
 */
export function* copyTextValues(text: string, lineEnd: string): Generator<RowValues> {
  // A line end inside a value is escaped, so every line feed ends a row.
  const ending = lineEnd.slice(0, -1);
  let start = 0;
  while (start < text.length) {
    const end = text.indexOf('\n', start);
    const line = text.slice(start, end < 0 ? text.length : end);
    if (!line.endsWith(ending)) throw new Error(`a line of COPY text does not end with its load's fields: a bug in whoever wrote it (${JSON.stringify(line.slice(0, 80))})`);
    yield line
      .slice(0, line.length - ending.length)
      .split('\t')
      .map((field) => (field === '\\N' ? null : field.includes('\\') ? field.replace(ESCAPED, (_, char: string) => UNESCAPES[char]!) : field));
    start = end < 0 ? text.length : end + 1;
  }
}
