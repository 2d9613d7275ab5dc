const SPECIAL = /[\\\t\n\r]/;
const SPECIAL_ALL = /[\\\t\n\r]/g;
const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * One row of Postgres `COPY … FROM STDIN` text format, ended by `end` (the line end, or fields
 * already in COPY text form and then the line end): fields separated by a
 * tab, `NULL` written `\N`, and in every text value the four characters COPY reads specially
 * (backslash, tab, line feed, carriage return) written as their backslash escapes, so a value
 * reaches its column byte for byte (an empty string stays an empty string, distinct from NULL).
 * Numbers are written in JavaScript's shortest round-trip form; decimals arrive here as text.
 *
 * Almost no value holds one of the four, so the row's text values are tested once, together,
 * rather than one by one; only a row that holds one is written again with the escapes.
 */
export function copyTextRow(values: readonly (string | number | null | undefined)[], end = '\n'): string {
  let line = '';
  let text = '';
  for (let i = 0; i < values.length; i += 1) {
    const value = values[i];
    if (i > 0) line += '\t';
    if (value === null || value === undefined) line += '\\N';
    else if (typeof value === 'number') line += String(value);
    else {
      line += value;
      text += value;
    }
  }
  return SPECIAL.test(text) ? escapedRow(values, end) : line + end;
}

function escapedRow(values: readonly (string | number | null | undefined)[], end: string): string {
  let line = '';
  for (let i = 0; i < values.length; i += 1) {
    const value = values[i];
    if (i > 0) line += '\t';
    if (value === null || value === undefined) line += '\\N';
    else if (typeof value === 'number') line += String(value);
    else line += value.replace(SPECIAL_ALL, (char) => ESCAPES[char]!);
  }
  return line + end;
}

/**
 * The end of every line of one load's COPY text: its `load_id` (the last column, the same on every
 * row; see `tableColumns`) and the line feed, for {@link copyTextRow}'s `end`.
 */
export function copyLineEnd(loadId: string): string {
  return `\t${copyTextRow([loadId])}`;
}
