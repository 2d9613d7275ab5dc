/** `text` as one word of a POSIX shell command line: as it is when plainly safe, else single-quoted. */
export function shellQuote(text: string): string {
  return /^[\w./:@-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
