import { describe, expect, it } from 'vitest';
import { settingSources } from '../../../src/config/setting-sources.js';
import { settingsSchema } from '../../../src/config/settings-schema.js';

/** As loadConfig merges: objects key by key, anything else replaced, undefined skipped. */
function merge(base: Record<string, unknown>, top: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [key, value] of Object.entries(top)) {
    if (value === undefined) continue;
    const current = out[key];
    const isObject = (candidate: unknown) => typeof candidate === 'object' && candidate !== null && !Array.isArray(candidate);
    out[key] = isObject(current) && isObject(value) ? merge(current as Record<string, unknown>, value as Record<string, unknown>) : value;
  }
  return out;
}

function sources(layers: { source: string; values: Record<string, unknown> }[]) {
  const settings = settingsSchema.parse(layers.reduce((acc, layer) => merge(acc, layer.values), {}));
  return Object.fromEntries(settingSources({ settings, layers }).map((entry) => [entry.key, entry]));
}

describe('settingSources', () => {
  it('gives every leaf of the schema, in its order, with the default where no layer sets it', () => {
    const entries = settingSources({ settings: settingsSchema.parse({}), layers: [] });
    expect(entries[0]).toEqual({ key: 'portfolios', value: [1001, 1002], source: 'default' });
    expect(entries.map((entry) => entry.key)).toContain('queue.keepFailed.count');
    expect(entries.every((entry) => entry.source === 'default')).toBe(true);
  });

  it('names the highest layer holding the key, even when it repeats the default', () => {
    const bySource = sources([
      { source: '/a/default.json', values: { retry: { attempts: 5, baseDelayMs: 10 } } },
      { source: '/a/local.json', values: { retry: { attempts: 5 } } },
      { source: 'command-line flags', values: { concurrency: 2, retry: { maxDelayMs: undefined } } },
    ]);
    expect(bySource['retry.attempts']).toMatchObject({ value: 5, source: '/a/local.json' });
    expect(bySource['retry.baseDelayMs']).toMatchObject({ value: 10, source: '/a/default.json' });
    // A flag left undefined does not take part in the merge, so it is not the source either.
    expect(bySource['retry.maxDelayMs']).toMatchObject({ value: 60_000, source: 'default' });
    expect(bySource['concurrency']).toMatchObject({ value: 2, source: 'command-line flags' });
  });

  it('gives each entry of a record its own line, and an array as one value', () => {
    const bySource = sources([{ source: '/a/default.json', values: { formats: { 'constituent.close': 'json' }, portfolios: [7] } }]);
    expect(bySource['formats.constituent.close']).toMatchObject({ value: 'json', source: '/a/default.json' });
    expect(bySource['formats.index']).toBeUndefined();
    expect(bySource['portfolios']).toMatchObject({ value: [7], source: '/a/default.json' });
  });

  it('shows an empty record as one value', () => {
    const bySource = sources([{ source: '/a/default.json', values: { formats: {} } }]);
    expect(bySource['formats']).toEqual({ key: 'formats', value: {}, source: '/a/default.json' });
  });
});
