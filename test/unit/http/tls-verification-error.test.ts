import { describe, expect, it } from 'vitest';
import { certificateReason, tlsVerificationError } from '../../../src/http/tls-verification-error.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('tlsVerificationError', () => {
  const url = new URL('https://exports.example:8443/api');

  it('names the server, the code and OpenSSL’s reason, and how to trust its CA', () => {
    const error = tlsVerificationError(withCode('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'), url);
    expect(error?.code).toBe('CONFIG_INVALID');
    expect(error?.message).toBe(
      'TLS certificate verification failed for https://exports.example:8443 (DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate): if the server is genuine, ' +
        'trust its CA by starting report-sync with NODE_EXTRA_CA_CERTS=/path/to/ca.pem; only on a test rig, set http.verifyTls to false to skip verification',
    );
  });

  it('leaves out the advice Node 24 appends (a flag Node 20 lacks), so every line words it the same', () => {
    const node24 = withCode(
      'unable to get local issuer certificate; if the root CA is installed locally, try running Node.js with --use-system-ca',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
    );
    const node20 = withCode('unable to get local issuer certificate', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY');
    expect(tlsVerificationError(node24, url)?.message).toBe(tlsVerificationError(node20, url)?.message);
    expect(certificateReason(node24)).toBe('unable to get local issuer certificate');
    // The ordinary case: a message without it is kept whole, semicolons and all.
    expect(certificateReason(withCode('certificate has expired; renewed?', 'CERT_HAS_EXPIRED'))).toBe('certificate has expired; renewed?');
  });

  it('is undefined for an error that is not about a certificate', () => {
    expect(tlsVerificationError(withCode('connect ECONNREFUSED', 'ECONNREFUSED'), url)).toBeUndefined();
  });
});
