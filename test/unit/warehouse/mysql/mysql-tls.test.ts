import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mysqlTlsOptions } from '../../../../src/warehouse/mysql/mysql-tls.js';

const dir = mkdtempSync(join(tmpdir(), 'report-sync-mysql-tls-'));
const caFile = join(dir, 'ca.pem');
writeFileSync(caFile, 'a CA in PEM');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tls = (url: string) => mysqlTlsOptions(new URL(url), 'mysql://warehouse.example/db');

describe('mysqlTlsOptions', () => {
  it('leaves a URL without parameters, or with ssl-mode=DISABLED, without TLS', () => {
    expect(tls('mysql://user@warehouse.example/db')).toBeUndefined();
    expect(tls('mysql://user@warehouse.example/db?ssl-mode=DISABLED')).toBeUndefined();
    expect(tls('mysql://user@warehouse.example/db?ssl-mode=disabled')).toBeUndefined();
  });

  it('verifies the certificate and the host name it names in every mode that encrypts, REQUIRED too', () => {
    for (const mode of ['REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY', 'verify_identity']) {
      expect(tls(`mysql://user@warehouse.example/db?ssl-mode=${mode}`)).toEqual({ rejectUnauthorized: true, verifyIdentity: true });
    }
  });

  it('trusts the CA of ssl-ca besides Node’s, which alone turns TLS on', () => {
    const withMode = tls(`mysql://user@warehouse.example/db?ssl-mode=VERIFY_IDENTITY&ssl-ca=${encodeURIComponent(caFile)}`);
    expect(withMode).toEqual({ ca: Buffer.from('a CA in PEM'), rejectUnauthorized: true, verifyIdentity: true });
    expect(tls(`mysql://user@warehouse.example/db?ssl-ca=${caFile}`)).toEqual(withMode);
  });

  it('verifies an IP address by its certificate’s chain, the one check mysql2 can make of it', () => {
    expect(tls('mysql://user@10.0.0.5/db?ssl-mode=REQUIRED')).toEqual({ rejectUnauthorized: true, verifyIdentity: false });
    expect(tls('mysql://user@[::1]:3306/db?ssl-mode=REQUIRED')).toEqual({ rejectUnauthorized: true, verifyIdentity: false });
  });

  it('refuses PREFERRED, which falls back to plain text unnoticed, and a mode it does not know, listing those it takes', () => {
    expect(() => tls('mysql://user@warehouse.example/db?ssl-mode=PREFERRED')).toThrow(
      /ssl-mode=PREFERRED: PREFERRED falls back to an unencrypted connection unnoticed; use DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY/,
    );
    expect(() => tls('mysql://user@warehouse.example/db?ssl-mode=on')).toThrow(/ssl-mode=on: use DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY/);
  });

  it('refuses a parameter a mysql:// URL does not take, such as Postgres’s sslmode, so that TLS is never left off by a typo', () => {
    expect(() => tls('mysql://user@warehouse.example/db?sslmode=require')).toThrow(
      'DATABASE_URL (mysql://warehouse.example/db) has the parameter sslmode, which a mysql:// URL does not take: use ssl-mode (DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY), ssl-ca (a CA file), ssl-cert and ssl-key (a client certificate) for TLS, or remove it',
    );
  });

  it('says which file cannot be read, and refuses files beside ssl-mode=DISABLED', () => {
    expect(() => tls(`mysql://user@warehouse.example/db?ssl-mode=REQUIRED&ssl-ca=${join(dir, 'missing.pem')}`)).toThrow(/ssl-ca=.*missing\.pem, which cannot be read \(ENOENT/);
    expect(() => tls(`mysql://user@warehouse.example/db?ssl-cert=${caFile}&ssl-key=${join(dir, 'missing-key.pem')}`)).toThrow(
      /ssl-key=.*missing-key\.pem, which cannot be read \(ENOENT/,
    );
    expect(() => tls(`mysql://user@warehouse.example/db?ssl-mode=DISABLED&ssl-ca=${caFile}`)).toThrow(
      /ssl-ca, ssl-cert or ssl-key with ssl-mode=DISABLED: remove one or the other/,
    );
  });

  it('sends a client certificate and its key, which turn TLS on, and refuses one without the other', () => {
    const keyFile = join(dir, 'key.pem');
    writeFileSync(keyFile, 'a key in PEM');
    expect(tls(`mysql://user@warehouse.example/db?ssl-cert=${caFile}&ssl-key=${keyFile}`)).toEqual({
      cert: Buffer.from('a CA in PEM'),
      key: Buffer.from('a key in PEM'),
      rejectUnauthorized: true,
      verifyIdentity: true,
    });
    expect(() => tls(`mysql://user@warehouse.example/db?ssl-mode=REQUIRED&ssl-cert=${caFile}`)).toThrow(/has ssl-cert without ssl-key: a client certificate needs both/);
    expect(() => tls(`mysql://user@warehouse.example/db?ssl-mode=REQUIRED&ssl-key=${caFile}`)).toThrow(/has ssl-key without ssl-cert: a client certificate needs both/);
  });
});
