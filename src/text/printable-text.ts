/** C0 and C1 control characters and DEL: what a terminal would act on instead of showing. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * `text` with every control character (escape sequences, CR, LF, BEL…) written as `\xNN`: safe on
 * one line of a terminal, a log or the ledger, and still saying exactly what was there. Used on
 * every text from outside (an upstream's error page, a file name, a JSON value echoed in a message).
 */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * Text from outside as it may be printed on one line of a terminal or a chat message: control
 * characters escaped (see {@link escapeControlCharacters}), never acted on, and cut to
 * `maxLength` characters.
 */
export function printableText(text: string, maxLength = 300): string {
  const shown = escapeControlCharacters(text);
  return shown.length > maxLength ? `${shown.slice(0, maxLength - 1)}…` : shown;
}
