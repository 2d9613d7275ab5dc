/**
 * Variables that hold a credential outright (a chat webhook's URL is its own credential).
 * `report-sync config` shows these as set or unset only.
 */
export const SECRET_VARIABLES = ['REPORT_CLIENT_SECRET', 'REPORT_PASSWORD', 'REPORT_USERNAME', 'REPORT_ALERT_WEBHOOK_URL'] as const;

/**
 * Variables that are URLs which may carry a password (userinfo or a `password` parameter).
 * `report-sync config` shows these without it.
 */
export const URL_VARIABLES = ['DATABASE_URL', 'REDIS_URL', 'REPORT_BASE_URL', 'REPORT_AUTH_URL', 'REPORT_TOKEN_URL'] as const;

/**
 * The secret values set in an environment: the credentials of the password grant and any password
 * inside a connection URL. The logger and the CLI's error printer censor them wherever they appear,
 * as a net under the rule that code never puts them in a message. A `.env` file is not read here:
 * its values reach the logger through the loaded configuration's `env`.
 */
export function secretValues(env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  const values: string[] = [];
  for (const name of SECRET_VARIABLES) {
    const value = env[name];
    if (value) values.push(value, value.trim());
  }
  for (const name of URL_VARIABLES) {
    const raw = env[name]?.trim();
    if (!raw) continue;
    values.push(...urlPasswords(raw));
  }
  return [...new Set(values.filter((value) => value !== ''))];
}

function urlPasswords(raw: string): string[] {
  const found: string[] = [];
  // By hand as well as with URL: a password holding "#" or "/" makes URL parse it as something else,
  // and a mistyped URL (one slash, no scheme) holds its userinfo where URL sees a path.
  const password = writtenPassword(raw);
  if (password !== undefined) found.push(password, safeDecode(password));
  try {
    const url = new URL(raw);
    if (url.password) found.push(url.password, safeDecode(url.password));
    for (const [key, value] of url.searchParams) if (/pass|secret|token/i.test(key) && value) found.push(value);
  } catch {
    // Not a URL: the config module says so, without quoting it.
  }
  return found;
}

/**
 * The password written before a URL's last "@", in whatever shape the URL was typed:
 * `postgres://u:pw@host`, `postgres:/u:pw@host` (one slash), `redis:/:pw@host`, `u:pw@host:5432/db`
 * and `default:pw@host` (no scheme: the "scheme" is the user). After a scheme and slashes, the
 * userinfo follows them; without slashes, everything before the "@" may be userinfo, and what
 * follows its first ":" is taken as the password, erring towards censoring more.
 */
function writtenPassword(raw: string): string | undefined {
  const at = raw.lastIndexOf('@');
  if (at < 0) return undefined;
  const before = raw.slice(0, at);
  const userinfo = /^[a-z][a-z0-9+.-]*:\/+(.*)$/is.exec(before)?.[1] ?? before;
  const colon = userinfo.indexOf(':');
  return colon >= 0 && colon < userinfo.length - 1 ? userinfo.slice(colon + 1) : undefined;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
