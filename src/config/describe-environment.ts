import { describeUrl, secretRedactor } from '../redaction/redact.js';
import type { AppConfig } from './load-config.js';
import { SECRET_VARIABLES, URL_VARIABLES, secretValues } from './secret-values.js';

/** One environment variable report-sync reads, as it may be shown. */
export interface EnvironmentEntry {
  readonly name: string;
  /**
   * The value; `set` or `unset` for a secret; a URL with its password redacted, without query or
   * fragment; `unset` when missing or blank (report-sync treats blank as missing).
   */
  readonly value: string;
  readonly secret: boolean;
  /** `.env`, `environment`, `default` (the built-in `DATABASE_URL`/`REDIS_URL`), or null when unset. */
  readonly source: '.env' | 'environment' | 'default' | null;
}

/** The variables the product reads, in the order `config/.env.example` explains them. */
const VARIABLES = [
  'REPORT_BASE_URL',
  'REPORT_AUTH_URL',
  'REPORT_REALM',
  'REPORT_TOKEN_URL',
  'REPORT_TENANT_ID',
  'REPORT_CLIENT_ID',
  'REPORT_CLIENT_SECRET',
  'REPORT_USERNAME',
  'REPORT_PASSWORD',
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_CLUSTER_NODES',
  'REPORT_ALERT_WEBHOOK_URL',
  'REPORT_ALERT_WEBHOOK_FORMAT',
  'REPORT_ALERT_DEPLOYMENT',
  'REPORT_SYNC_CONFIG',
  'REPORT_SYNC_CONFIG_DIR',
  'LOG_LEVEL',
  'NO_COLOR',
] as const;

const SECRETS: ReadonlySet<string> = new Set(SECRET_VARIABLES);
const URLS: ReadonlySet<string> = new Set(URL_VARIABLES);

/**
 * The environment variables report-sync reads and where each came from, for `report-sync config`.
 * Secrets only as set or unset; URLs via `describeUrl` with their parameters (the password and parameters
 * named like secrets redacted, no fragment), non-URL text not at all. Missing variables are listed, never an error: this is what one runs to
 * find them.
 */
export function describeEnvironment(config: Pick<AppConfig, 'env' | 'dotEnvVariables' | 'databaseUrl' | 'redisUrl'>): EnvironmentEntry[] {
  const defaults: Record<string, string> = { DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl };
  // A net under the rules below, as for every message: a credential that turns up in another
  // variable (a password pasted as the realm) is censored there too.
  const redact = secretRedactor(secretValues(config.env));
  return VARIABLES.map((name): EnvironmentEntry => {
    const entry = describeVariable(name, config.env[name], config.dotEnvVariables.has(name), defaults[name]);
    return entry.secret ? entry : { ...entry, value: redact(entry.value) };
  });
}

function describeVariable(name: string, raw: string | undefined, fromDotEnv: boolean, fallback: string | undefined): EnvironmentEntry {
  const secret = SECRETS.has(name);
  const source = raw === undefined ? null : fromDotEnv ? '.env' : 'environment';
  if (raw === undefined || raw.trim() === '') {
    // The product falls back to its default on a blank DATABASE_URL or REDIS_URL too.
    if (fallback !== undefined) return { name, value: shownUrl(name, fallback), secret, source: 'default' };
    return { name, value: 'unset', secret, source };
  }
  if (secret) return { name, value: 'set', secret, source };
  return { name, value: URLS.has(name) ? shownUrl(name, raw.trim()) : raw, secret, source };
}

const NOT_SHOWN = 'set (not a URL, so not shown)';

function shownUrl(name: string, raw: string): string {
  // A sqlite: path holds no password, and describeUrl would cut it at a '#' or '?' in the file name.
  if (name === 'DATABASE_URL' && raw.startsWith('sqlite:')) return raw;
  return describeUrl(raw, { parameters: true }) ?? NOT_SHOWN;
}
