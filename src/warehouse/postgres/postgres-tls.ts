import { readUrlFile, unknownUrlParameter } from '../engine/url-parameters.js';

/** The TLS parameters of a `postgres://` URL that pg reads (libpq's names). */
const TLS_PARAMETERS = ['ssl', 'sslmode', 'sslcert', 'sslkey', 'sslrootcert', 'sslnegotiation', 'sslpassword', 'uselibpqcompat'];

/** The parameters that name a file pg reads when it connects. */
const FILE_PARAMETERS = ['sslcert', 'sslkey', 'sslrootcert'];

/**
 * Checks a `postgres://` DATABASE_URL's TLS parameters before pg reads them: pg ignores a
 * parameter it does not know, so a TLS setting spelt as MySQL's clients spell it (`ssl-mode`,
 * `ssl-ca`) would leave the connection unencrypted unnoticed, and it reads `sslrootcert` and its
 * siblings only when it connects, where a missing file looked like a refused write. Other
 * parameters (`application_name`, `options`…) pass to pg untouched.
 */
export function checkPostgresTls(url: URL, location: string): void {
  for (const name of url.searchParams.keys()) {
    if (/ssl/i.test(name) && !TLS_PARAMETERS.includes(name)) {
      throw unknownUrlParameter(location, name, 'postgres', 'sslmode (disable, or verify-full to encrypt and verify) and sslrootcert (a CA file)');
    }
  }
  for (const name of FILE_PARAMETERS) {
    const file = url.searchParams.get(name);
    if (file !== null) readUrlFile(location, name, file);
  }
}
