/** C0 and C1 control characters and DEL: what a terminal would act on instead of showing. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Text from outside (an upstream's error page, a file name) as it may be printed on one line of a
 * terminal or a chat message: control characters (escape sequences, CR, LF) shown as `\xNN`, never
 * acted on, and cut to `maxLength` characters.
 */
export function printableText(text: string, maxLength = 300): string {
  const shown = text.replace(CONTROL, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return shown.length > maxLength ? `${shown.slice(0, maxLength - 1)}…` : shown;
}
