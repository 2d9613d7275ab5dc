import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { ConfigError } from '../../../src/errors.js';

/*
 * token.minLifetimeSeconds (10 s) made a 2 s token live 10 s, and token.minRenewalIntervalMs called a
 * second 401 within a minute a configuration error; both are gone. A file or variable still setting
 * them is refused with what to do, never pointed at another setting ("did you mean
 * REPORT_SYNC_TOKEN__MAX_LIFETIME_SECONDS?" would have been the answer to the old variable).
 */

describe('the removed token settings', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function project(local?: object): string {
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-retired-'));
    dirs.push(dir);
    if (local) {
      mkdirSync(join(dir, 'config'));
      writeFileSync(join(dir, 'config', 'local.json'), JSON.stringify(local));
    }
    return dir;
  }

  function refusal(load: () => unknown): string {
    try {
      load();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error('expected a ConfigError');
  }

  it.each([
    ['REPORT_SYNC_TOKEN__MIN_LIFETIME_SECONDS', '1', 'token.minLifetimeSeconds'],
    ['REPORT_SYNC_TOKEN__MIN_RENEWAL_INTERVAL_MS', '60000', 'token.minRenewalIntervalMs'],
  ])('refuses %s=%s, saying it was removed and to delete it', (name, value, key) => {
    const message = refusal(() => loadConfig({ cwd: project(), env: { [name]: value } }));
    expect(message).toContain(`${key} (from ${name}): this setting was removed`);
    expect(message).toContain('delete it');
    expect(message).not.toContain('did you mean');
  });

  it('refuses them in a settings file too, naming the file', () => {
    const message = refusal(() => loadConfig({ cwd: project({ token: { minLifetimeSeconds: 1 } }), env: {} }));
    expect(message).toMatch(/token\.minLifetimeSeconds \(from .*local\.json\): this setting was removed: every token lifetime the identity provider states is believed/);
  });

  it('loads the token settings that remain as before', () => {
    const { token } = loadConfig({ cwd: project({ token: { maxLifetimeSeconds: 3_600 } }), env: { REPORT_SYNC_TOKEN__REFRESH_MARGIN_SECONDS: '10' } }).settings;
    expect(token).toMatchObject({ refreshMarginSeconds: 10, maxLifetimeSeconds: 3_600 });
    expect(token).not.toHaveProperty('minLifetimeSeconds');
  });
});
