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
  // By hand as well as with URL: a password holding "#" or "/" makes URL parse it as something else.
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/i.exec(raw)?.[1];
  const colon = userinfo?.indexOf(':') ?? -1;
  if (userinfo !== undefined && colon >= 0) found.push(userinfo.slice(colon + 1), safeDecode(userinfo.slice(colon + 1)));
  try {
    const url = new URL(raw);
    if (url.password) found.push(url.password, safeDecode(url.password));
    for (const [key, value] of url.searchParams) if (/pass|secret|token/i.test(key) && value) found.push(value);
  } catch {
    // Not a URL: the config module says so, without quoting it.
  }
  return found;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
