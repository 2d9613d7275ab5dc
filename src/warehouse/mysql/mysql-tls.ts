import { isIP } from 'node:net';
import { ConfigError } from '../../errors/sync-error.js';
import { readUrlFile, unknownUrlParameter } from '../engine/url-parameters.js';

/** The `ssl-mode` values of MySQL's own clients that report-sync takes. */
const SSL_MODES = ['DISABLED', 'REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY'] as const;

/** mysql2's `ssl` option, as far as report-sync sets it. */
export interface MysqlTls {
  /** A CA to trust besides Node's. */
  readonly ca?: Buffer;
  /** A client certificate and its key, for a server that asks for one (`REQUIRE X509`). */
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly rejectUnauthorized: true;
  /** Also check that the certificate names the host. */
  readonly verifyIdentity: boolean;
}

/** The parameters a `mysql://` DATABASE_URL may carry. */
const PARAMETERS = ['ssl-mode', 'ssl-ca', 'ssl-cert', 'ssl-key'];

/**
 * The TLS settings of a `mysql://` DATABASE_URL's parameters, as MySQL's own clients name them:
 * `ssl-mode` (`DISABLED`, the default without `ssl-ca`; `REQUIRED`, `VERIFY_CA` or
 * `VERIFY_IDENTITY`), `ssl-ca` (a PEM file of the CA to trust besides Node's) and `ssl-cert` with
 * `ssl-key` (a client certificate, for a server that asks for one); each file alone turns TLS on. Every mode that encrypts also verifies the server's certificate and, for a host name,
 * that the certificate names it: report-sync never trusts an unverified server (its HTTP
 * connections do the same), so `REQUIRED` is verified as `VERIFY_IDENTITY` is. `PREFERRED`, which
 * falls back to plain text without a word, and any other parameter are refused, naming what to
 * write instead: a misspelt parameter would otherwise leave the connection unencrypted unnoticed.
 * @returns mysql2's `ssl` option, or `undefined` for a connection without TLS
 */
export function mysqlTlsOptions(url: URL, location: string): MysqlTls | undefined {
  for (const name of url.searchParams.keys()) {
    if (!PARAMETERS.includes(name)) {
      throw unknownUrlParameter(location, name, 'mysql', `ssl-mode (${SSL_MODES.join(', ')}), ssl-ca (a CA file), ssl-cert and ssl-key (a client certificate)`);
    }
  }
  const modeText = url.searchParams.get('ssl-mode');
  const caFile = url.searchParams.get('ssl-ca');
  const certFile = url.searchParams.get('ssl-cert');
  const keyFile = url.searchParams.get('ssl-key');
  if ((certFile === null) !== (keyFile === null)) {
    throw new ConfigError(`DATABASE_URL (${location}) has ${certFile === null ? 'ssl-key without ssl-cert' : 'ssl-cert without ssl-key'}: a client certificate needs both`);
  }
  const mode = modeText === null ? undefined : SSL_MODES.find((known) => known === modeText.toUpperCase());
  if (modeText !== null && mode === undefined) {
    const preferred = modeText.toUpperCase() === 'PREFERRED';
    throw new ConfigError(
      `DATABASE_URL (${location}) has ssl-mode=${modeText}: ` +
        (preferred ? 'PREFERRED falls back to an unencrypted connection unnoticed; ' : '') +
        `use ${SSL_MODES.join(', ')} (every mode but DISABLED encrypts and verifies the server's certificate)`,
    );
  }
  const files = caFile !== null || certFile !== null;
  if (mode === 'DISABLED') {
    if (files) throw new ConfigError(`DATABASE_URL (${location}) has ssl-ca, ssl-cert or ssl-key with ssl-mode=DISABLED: remove one or the other`);
    return undefined;
  }
  if (mode === undefined && !files) return undefined;
  const read = (name: string, file: string | null) => (file === null ? {} : { [name]: readUrlFile(location, `ssl-${name}`, file) });
  // mysql2 checks only a host name against the certificate (for an IP address it would compare
  // the certificate with "localhost"), so an address is verified by its certificate's chain.
  return { ...read('ca', caFile), ...read('cert', certFile), ...read('key', keyFile), rejectUnauthorized: true, verifyIdentity: isIP(url.hostname.replace(/^\[|\]$/g, '')) === 0 };
}
