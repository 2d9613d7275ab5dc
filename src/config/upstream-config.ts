import { ConfigError } from '../errors/sync-error.js';
import { joinUrl } from '../http/join-url.js';

/** Where the export service and its identity provider are, and who we are to them. */
export interface UpstreamConfig {
  /** `REPORT_BASE_URL`: the gateway base address; may carry a path of its own. */
  readonly baseUrl: URL;
  /** `REPORT_TOKEN_URL`, or `REPORT_AUTH_URL` + `/realms/{REPORT_REALM}/protocol/openid-connect/token`. */
  readonly tokenUrl: URL;
  /** `REPORT_TENANT_ID`, sent as `X-CLIENT-ID`. */
  readonly tenantId: string;
  readonly credentials: PasswordGrantCredentials;
}

/** The four values of an OAuth 2.0 password grant. Never log this object. */
export interface PasswordGrantCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly username: string;
  readonly password: string;
}

const REQUIRED = ['REPORT_BASE_URL', 'REPORT_TENANT_ID', 'REPORT_CLIENT_ID', 'REPORT_CLIENT_SECRET', 'REPORT_USERNAME', 'REPORT_PASSWORD'] as const;

/**
 * Reads the upstream's address and credentials from the environment. Only the commands that talk to
 * the service call this, so `migrate` and `status` work without credentials. Error messages name
 * variables, never their values.
 */
export function resolveUpstreamConfig(env: Readonly<Record<string, string | undefined>>): UpstreamConfig {
  const value = (name: string): string | undefined => {
    const raw = env[name];
    return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
  };
  const missing: string[] = REQUIRED.filter((name) => value(name) === undefined);
  if (!value('REPORT_TOKEN_URL')) {
    if (!value('REPORT_AUTH_URL')) missing.push('REPORT_AUTH_URL (or REPORT_TOKEN_URL)');
    if (!value('REPORT_REALM')) missing.push('REPORT_REALM (or REPORT_TOKEN_URL)');
  }
  if (missing.length > 0) {
    throw new ConfigError(`missing environment variables: ${missing.join(', ')}; set them in the environment or in .env (see config/.env.example)`);
  }

  const baseUrl = httpUrl('REPORT_BASE_URL', value('REPORT_BASE_URL')!);
  const tokenUrlSetting = value('REPORT_TOKEN_URL');
  const tokenUrl = tokenUrlSetting
    ? httpUrl('REPORT_TOKEN_URL', tokenUrlSetting)
    : joinUrl(httpUrl('REPORT_AUTH_URL', value('REPORT_AUTH_URL')!), `realms/${encodeURIComponent(value('REPORT_REALM')!)}/protocol/openid-connect/token`);

  return {
    baseUrl,
    tokenUrl,
    tenantId: value('REPORT_TENANT_ID')!,
    credentials: {
      clientId: value('REPORT_CLIENT_ID')!,
      clientSecret: env.REPORT_CLIENT_SECRET!,
      username: value('REPORT_USERNAME')!,
      password: env.REPORT_PASSWORD!,
    },
  };
}

function httpUrl(name: string, raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a URL; expected something like https://host/path`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http:// or https:// URL, not ${url.protocol}`);
  }
  if (url.username || url.password) {
    throw new ConfigError(`${name} must not carry credentials; use REPORT_CLIENT_ID and friends`);
  }
  if (url.search || url.hash) throw new ConfigError(`${name} must not have a query string or fragment`);
  return url;
}
