/** What replaces a secret. */
const CENSOR = '[redacted]';

/**
 * Secrets shorter than this are not searched for: replacing every "abc" in a message would garble
 * it, and the field and Bearer patterns below still catch such a value where it is labelled.
 */
const MIN_SECRET_LENGTH = 4;

/**
 * `Bearer <token>` / `Basic <credentials>`, wherever an upstream echoes an Authorization header.
 * Eight characters at least, so prose such as "a Bearer token" survives.
 */
const AUTH_SCHEME_VALUE = /\b(Bearer|Basic)(?:\s+|%20|\+)[A-Za-z0-9\-._~+/%]{8,}=*/gi;

/**
 * A labelled credential: `password=…`, `"client_secret": "…"`, `access_token: …`. The value stops
 * at a quote, backslash, separator or space, so the JSON of a log line stays valid after the cut.
 */
const LABELLED_SECRET = /((?:password|passwd|client_secret|clientSecret|access_token|accessToken|refresh_token|id_token)["']?\s*[:=]\s*["']?)[^"'\\&\s,;}]+/gi;

/**
 * Makes the function that removes credentials and tokens from text: every given secret in the
 * forms it travels in (as is, form- or URL-encoded, JSON-escaped), any `Bearer …` value, and any
 * labelled password, client secret or token. The forms are worked out here, once: the logger
 * runs the result over every line it writes.
 */
export function secretRedactor(secrets: Iterable<string | undefined>): (text: string) => string {
  const forms = secretForms(secrets);
  return (text) => {
    let out = text;
    for (const form of forms) if (out.includes(form)) out = out.split(form).join(CENSOR);
    return out.replace(AUTH_SCHEME_VALUE, `$1 ${CENSOR}`).replace(LABELLED_SECRET, `$1${CENSOR}`);
  };
}

function secretForms(secrets: Iterable<string | undefined>): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === undefined || secret.length < MIN_SECRET_LENGTH) continue;
    const jsonEscaped = JSON.stringify(secret).slice(1, -1);
    for (const form of [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2), jsonEscaped, jsonEscaped.replaceAll('/', '\\/')]) {
      forms.add(form);
    }
  }
  // Longest first, so a secret that contains another is cut whole.
  return [...forms].sort((a, b) => b.length - a.length);
}
