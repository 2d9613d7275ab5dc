import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { retiredSettingsIn } from '../../../src/config/retired-settings.js';

/*
 * token.minLifetimeSeconds (10 s) made a 2 s token live 10 s, and token.minRenewalIntervalMs called a
 * second 401 within a minute a configuration error; both are gone. A deployment that still sets them
 * (the README once said to lower minLifetimeSeconds for short tokens) must start after the upgrade:
 * they are ignored with a warning saying what replaced them, never pointed at another setting.
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

  it.each([
    ['REPORT_SYNC_TOKEN__MIN_LIFETIME_SECONDS', '1', 'token.minLifetimeSeconds', 'every token lifetime the identity provider states is believed now'],
    ['REPORT_SYNC_TOKEN__MIN_RENEWAL_INTERVAL_MS', '60000', 'token.minRenewalIntervalMs', 'a 401 is judged per token now'],
  ])('accepts %s=%s and warns that it is ignored, saying what replaced it', (name, value, key, instead) => {
    const config = loadConfig({ cwd: project(), env: { [name]: value } });
    const warnings = retiredSettingsIn(config.settings);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${key} was removed and is ignored: ${instead}`);
    expect(warnings[0]).toContain('delete it from your settings');
    expect(warnings[0]).not.toContain('did you mean');
  });

  it('accepts them in a settings file too, with the same warning', () => {
    const config = loadConfig({ cwd: project({ token: { minLifetimeSeconds: 10, minRenewalIntervalMs: 60_000 } }), env: {} });
    expect(retiredSettingsIn(config.settings)).toHaveLength(2);
  });

  it('warns of nothing when neither is set, and loads the token settings that remain as before', () => {
    const config = loadConfig({ cwd: project({ token: { maxLifetimeSeconds: 3_600 } }), env: { REPORT_SYNC_TOKEN__REFRESH_MARGIN_SECONDS: '10' } });
    expect(config.settings.token).toMatchObject({ refreshMarginSeconds: 10, maxLifetimeSeconds: 3_600 });
    expect(retiredSettingsIn(config.settings)).toEqual([]);
  });
});
