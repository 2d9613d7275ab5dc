/** A setting's value as a message may show it: JSON (so control characters are escaped), cut short. */
export function quoteSettingValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
