import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPostgresTls } from '../../../../src/warehouse/postgres/postgres-tls.js';

const dir = mkdtempSync(join(tmpdir(), 'report-sync-postgres-tls-'));
const caFile = join(dir, 'ca.pem');
writeFileSync(caFile, 'a CA in PEM');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const check = (url: string) => checkPostgresTls(new URL(url), 'postgres://db.example/warehouse');

describe('checkPostgresTls', () => {
  it("passes pg's own TLS parameters with a readable CA, and parameters that are not about TLS", () => {
    expect(() => check(`postgres://app@db.example/warehouse?sslmode=verify-full&sslrootcert=${encodeURIComponent(caFile)}`)).not.toThrow();
    expect(() => check('postgres://app@db.example/warehouse?sslmode=disable&application_name=report-sync&options=-c%20statement_timeout%3D0')).not.toThrow();
    expect(() => check('postgres://app@db.example/warehouse')).not.toThrow();
  });

  it('refuses a TLS parameter spelt as MySQL spells it, which pg would ignore, naming the ones to use', () => {
    for (const name of ['ssl-mode', 'ssl-ca', 'sslMode', 'ssl_mode']) {
      expect(() => check(`postgres://app@db.example/warehouse?${name}=REQUIRED`)).toThrow(
        `DATABASE_URL (postgres://db.example/warehouse) has the parameter ${name}, which a postgres:// URL does not take: use sslmode (disable, or verify-full to encrypt and verify) and sslrootcert (a CA file) for TLS, or remove it`,
      );
    }
  });

  it('says which file of sslrootcert, sslcert or sslkey cannot be read, before any connection', () => {
    for (const name of ['sslrootcert', 'sslcert', 'sslkey']) {
      expect(() => check(`postgres://app@db.example/warehouse?sslmode=verify-full&${name}=${join(dir, 'missing.pem')}`)).toThrow(
        new RegExp(`has ${name}=.*missing\\.pem, which cannot be read \\(ENOENT`),
      );
    }
  });
});
