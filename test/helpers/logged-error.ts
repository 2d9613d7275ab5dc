/**
 * The message of the error a log line carries under `err` (pino's serializer: the error's message
 * followed by its causes'), or '' when it carries none.
 */
export function loggedErrorMessage(line: Record<string, unknown> | undefined): string {
  const err = line?.err as { message?: unknown } | undefined;
  return typeof err?.message === 'string' ? err.message : '';
}
