import type { AppConfig } from './load-config.js';

/** One effective setting and the layer that decided it. */
export interface SettingSource {
  /** Dotted path, as validation messages name it: `retry.attempts`, `formats.index`. */
  readonly key: string;
  readonly value: unknown;
  /** The `source` of the highest layer that sets it (a file path, `LOG_LEVEL`…), or `default`: the schema's. */
  readonly source: string;
}

/**
 * Every effective setting, in schema order, with the layer it came from (the highest holding the
 * key, as in the merge; none: the default). Objects and records are descended into so each line has
 * one source; arrays are values, as the merge replaces them whole.
 */
export function settingSources(config: Pick<AppConfig, 'settings' | 'layers'>): SettingSource[] {
  const out: SettingSource[] = [];
  const visit = (value: unknown, path: readonly string[]): void => {
    if (isPlainObject(value) && Object.keys(value).length > 0) {
      for (const [key, child] of Object.entries(value)) visit(child, [...path, key]);
      return;
    }
    const layer = [...config.layers].reverse().find((candidate) => valueAt(candidate.values, path) !== undefined);
    out.push({ key: path.join('.'), value, source: layer?.source ?? 'default' });
  };
  visit(config.settings, []);
  return out;
}

function valueAt(values: unknown, path: readonly string[]): unknown {
  let node = values;
  for (const part of path) {
    if (!isPlainObject(node) || !Object.hasOwn(node, part)) return undefined;
    node = node[part];
  }
  return node;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
