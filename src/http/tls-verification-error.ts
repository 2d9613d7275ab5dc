import { ConfigError } from '../errors/sync-error.js';

/** The codes Node and OpenSSL give a TLS handshake whose certificate could not be verified. */
const CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

/**
 * When `error` is a failed certificate verification, the error to report instead: a configuration
 * error (fatal: every request to that server would fail the same way, so retrying or waiting is
 * pointless) that names the server, the reason, and the two ways out. Otherwise `undefined`.
 */
export function tlsVerificationError(error: unknown, url: URL): ConfigError | undefined {
  const code = certificateCode(error);
  if (code === undefined) return undefined;
  const reason = certificateReason(error as Error) || code;
  const altName = code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH';
  const fix = altName
    ? `the certificate is not for ${url.hostname}: check the host in the URL`
    : 'if the server is genuine, trust its CA by starting report-sync with NODE_EXTRA_CA_CERTS=/path/to/ca.pem';
  return new ConfigError(
    `TLS certificate verification failed for ${url.origin} (${code}: ${reason}): ${fix}; only on a test rig, set http.verifyTls to false to skip verification`,
    { cause: error },
  );
}

/**
 * Advice Node 24 and later append to a certificate error's message: a flag Node 20 lacks, where
 * report-sync's own message says how to trust a CA on every line.
 */
const NODE_SYSTEM_CA_ADVICE = /;\s*if the root CA is installed locally, try running Node\.js with --use-system-ca\.?$/;

/** A failed certificate verification's message, as OpenSSL words it, without Node's own advice. */
export function certificateReason(error: Error): string {
  return error.message.replace(NODE_SYSTEM_CA_ADVICE, '');
}

/** The code of a failed certificate verification in `error` (or its causes), if that is what it is. */
export function certificateCode(error: unknown): string | undefined {
  // undici sometimes wraps the socket's error; look one level down as well.
  for (let current = error, depth = 0; current && depth < 3; current = (current as { cause?: unknown }).cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && CERTIFICATE_CODES.has(code)) return code;
  }
  return undefined;
}
