const SPECIAL = /[\\\t\n\r]/;
const SPECIAL_ALL = /[\\\t\n\r]/g;
const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * One row of Postgres `COPY … FROM STDIN` text format, line end included: fields separated by a
 * tab, `NULL` written `\N`, and in every text value the four characters COPY reads specially
 * (backslash, tab, line feed, carriage return) written as their backslash escapes, so a value
 * reaches its column byte for byte (an empty string stays an empty string, distinct from NULL).
 * Numbers are written in JavaScript's shortest round-trip form; decimals arrive here as text.
 */
export function copyTextRow(values: readonly (string | number | null | undefined)[]): string {
  let line = '';
  for (let i = 0; i < values.length; i += 1) {
    const value = values[i];
    if (i > 0) line += '\t';
    if (value === null || value === undefined) line += '\\N';
    else if (typeof value === 'number') line += String(value);
    else line += SPECIAL.test(value) ? value.replace(SPECIAL_ALL, (char) => ESCAPES[char]!) : value;
  }
  return `${line}\n`;
}
