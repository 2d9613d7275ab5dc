import { writtenUserinfo } from '../redaction/redact.js';

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
 * Settings that hold a secret, by key and by variable (the variable as `settingVariables` derives
 * it, written out here so that the error printer need not load the settings schema).
 * `report-sync config` shows them as set or unset only, and validation never quotes them.
 */
export const SECRET_SETTINGS: readonly { readonly key: string; readonly variable: string }[] = [{ key: 'dashboard.token', variable: 'REPORT_SYNC_DASHBOARD__TOKEN' }];

/**
 * The secrets set in an environment (password-grant credentials, passwords in connection URLs),
 * censored by the logger and the CLI's error printer as a net under the rule that code never puts
 * them in a message. `.env` values reach the logger through the loaded configuration's `env`.
 */
export function secretValues(env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  const values: string[] = [];
  for (const name of [...SECRET_VARIABLES, ...SECRET_SETTINGS.map((setting) => setting.variable)]) {
    const value = env[name];
    if (value) values.push(value, value.trim());
  }
  // The webhook URL is censored whole above; its password is censored alone too, as it travels
  // alone once it is sent as Basic authorization.
  for (const name of [...URL_VARIABLES, 'REPORT_ALERT_WEBHOOK_URL']) {
    const raw = env[name]?.trim();
    if (!raw) continue;
    values.push(...urlPasswords(raw));
  }
  // Addresses only, but a node pasted as a URL may carry a password: censored like one in REDIS_URL.
  for (const entry of env.REDIS_CLUSTER_NODES?.split(',') ?? []) if (entry.trim()) values.push(...urlPasswords(entry.trim()));
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

function writtenPassword(raw: string): string | undefined {
  const password = writtenUserinfo(raw)?.password;
  return password ? password : undefined;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
