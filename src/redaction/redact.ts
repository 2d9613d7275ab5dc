/*
 * Redaction: how secrets are kept out of every message, log line, alert, ledger row and page.
 * Text from outside (error pages, OAuth errors) is cut by value and by label, log objects by
 * field name, and URL-like settings lose their password, query and fragment before they are shown.
 */

/** What replaces a secret, wherever it is cut out. */
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
 * Makes the function that removes credentials and tokens from text (see {@link redactSecrets}),
 * working out the secrets' encoded forms once, since the logger runs it over every line.
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

/**
 * Removes credentials and tokens from outside text: each secret as is, form- or URL-encoded and
 * JSON-escaped, any `Bearer …` value, and any labelled password, client secret or token. Upstreams
 * echo requests in error pages; this keeps them out of messages, logs and the ledger.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  return secretRedactor(secrets)(text);
}

/**
 * Field names whose values are censored at the top of a log line's object and one level down
 * (`password`, `err.password`, `headers.authorization`…).
 */
const SECRET_FIELDS: ReadonlySet<string> = new Set([
  'password',
  'clientSecret',
  'client_secret',
  'token',
  'accessToken',
  'access_token',
  'refresh_token',
  'authorization',
  'Authorization',
  'credentials',
]);

/** Censored inside a `headers` object one level down too (`err.headers.authorization`). */
const HEADER_FIELDS: ReadonlySet<string> = new Set(['authorization', 'Authorization']);

/**
 * The logger's net for secret fields logged by accident (headers, an error's options), at the top
 * level or one down, like pino's `redact` paths but without cloning every line. Copies only what it
 * censors (prototype and own properties kept, so an `Error` keeps its stack), never the caller's.
 */
export function censorSecretFields<T>(value: T): T {
  return censorLevel(value, 0);
}

function censorLevel<T>(value: T, depth: number): T {
  // Bytes hold no fields, and walking a logged buffer's indexes would cost a line per byte.
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return value;
  const object = value as Record<string, unknown>;
  let replaced: Record<string, unknown> | undefined;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    const field = object[key];
    let censored = field;
    if (depth < 2 && SECRET_FIELDS.has(key)) {
      if (field !== undefined) censored = CENSOR;
    } else if (depth === 2 && HEADER_FIELDS.has(key)) {
      if (field !== undefined) censored = CENSOR;
    } else if (field !== null && typeof field === 'object' && (depth === 0 || (depth === 1 && key === 'headers'))) {
      censored = censorLevel(field, depth + 1);
    }
    if (censored !== field) {
      replaced ??= {};
      replaced[key] = censored;
    }
  }
  if (replaced === undefined) return value;
  if (Array.isArray(object)) return Object.assign(object.slice(), replaced) as T;
  const descriptors = Object.getOwnPropertyDescriptors(object);
  // From Node 22 on, an error's stack is an accessor that reads the error it was made on, so copied
  // as it is it reads nothing on the copy: the copy keeps the text instead.
  const stack = descriptors.stack;
  if (stack?.get) descriptors.stack = { value: object.stack, enumerable: stack.enumerable ?? false, writable: true, configurable: true };
  for (const key in replaced) descriptors[key] = { value: replaced[key], enumerable: true, writable: true, configurable: true };
  return Object.create(Object.getPrototypeOf(object), descriptors) as T;
}

/** The userinfo of a URL-like text, found where it was written, not where a parser would look. */
export interface WrittenUserinfo {
  /** Index of its first character in the text. */
  readonly start: number;
  /** Index of the "@" that ends it. */
  readonly at: number;
  readonly user: string;
  /** What follows the first ":", when there is one (possibly empty). */
  readonly password: string | undefined;
}

/**
 * The `user[:password]@` part of a URL however typed (`postgres:/u:pw@host`, `u:pw@host:5432/db`,
 * no scheme at all). The last "@" ends it, since a password may hold "@", "/" or "#" that URL would
 * misread: this errs towards censoring more. Undefined when the text has no "@".
 */
export function writtenUserinfo(raw: string): WrittenUserinfo | undefined {
  const at = raw.lastIndexOf('@');
  if (at < 0) return undefined;
  const scheme = /^[a-z][a-z0-9+.-]*:\/+/i.exec(raw);
  const start = scheme && scheme[0].length <= at ? scheme[0].length : 0;
  const userinfo = raw.slice(start, at);
  const colon = userinfo.indexOf(':');
  return colon < 0 ? { start, at, user: userinfo, password: undefined } : { start, at, user: userinfo.slice(0, colon), password: userinfo.slice(colon + 1) };
}

/** Query parameters whose value is shown as `[redacted]`: pg reads `?password=` and `?sslpassword=`. */
const SECRET_PARAMETER = /pass|secret|token|key/i;

/**
 * A URL-like setting as it may be shown: `[redacted]` in its password's place, so a reader can
 * tell one was given; no fragment, and no query unless `parameters` (pg reads `?password=`, and a
 * "#" in a password leaves its tail in the fragment). With `parameters` (TLS settings such as
 * `sslmode` or `ssl-mode` are there) each is shown decoded, `[redacted]` for the value of one
 * named like a secret. A well-formed URL is shown as URL reads it; a mistyped one as written, so
 * the typo shows, and without its query, which may be the tail of a password. Undefined when the
 * text is not a URL at all.
 */
export function describeUrl(raw: string, options: { readonly parameters?: boolean } = {}): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const written = writtenUserinfo(raw);
  if (written && !parsedWhole(url, written.user, written.password)) {
    const tail = raw.slice(written.at).split(/[?#]/)[0]!;
    const password = written.password === undefined ? '' : written.password === '' ? ':' : `:${CENSOR}`;
    return `${raw.slice(0, written.start)}${written.user}${password}${tail}`;
  }
  const query =
    options.parameters === true && url.search !== '' ? `?${[...url.searchParams].map(([name, value]) => `${name}=${SECRET_PARAMETER.test(name) ? CENSOR : value}`).join('&')}` : '';
  const hadPassword = url.password !== '';
  url.password = '';
  url.search = '';
  url.hash = '';
  if (!hadPassword) return `${url.href}${query}`;
  // Written in by hand: URL would percent-escape the brackets of the marker.
  const userinfoEnd = `${url.protocol}//${url.username === '' ? '' : `${url.username}@`}`;
  return `${url.protocol}//${url.username}:${CENSOR}@${url.href.slice(userinfoEnd.length)}${query}`;
}

/** Whether URL found the userinfo where the text has it, so the password it removes is the whole one. */
function parsedWhole(url: URL, user: string, password: string | undefined): boolean {
  return `${url.username}${url.password ? `:${url.password}` : ''}` === `${user}${password ? `:${password}` : ''}`;
}
