import { secretRedactor } from './secret-redactor.js';

/**
 * Removes credentials and tokens from text that came from outside (an error page, an OAuth error,
 * a message): every given secret in the forms it travels in (as is, form- or URL-encoded,
 * JSON-escaped), any `Bearer …` value, and any labelled password, client secret or token.
 * Upstreams echo requests back in their error pages; this is what keeps those echoes out of
 * messages, logs and the ledger. Text redacted often with the same secrets (log lines) should
 * use {@link secretRedactor}, which works out the secrets' forms once.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  return secretRedactor(secrets)(text);
}
