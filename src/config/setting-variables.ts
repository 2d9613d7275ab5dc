import type { z } from 'zod';
import { settingsSchema } from './settings-schema.js';

/** How a setting's text in an environment variable is read. */
export type SettingValueKind = 'number' | 'boolean' | 'string' | 'number-list' | 'string-list';

/** One setting that can be given through the environment. */
export interface SettingVariable {
  /** `REPORT_SYNC_` + the key path: segments in upper snake case joined by `__` (`REPORT_SYNC_QUEUE__RATE_LIMIT__MAX`). */
  readonly name: string;
  /** The key path, as settings files and validation messages have it (`['queue', 'rateLimit', 'max']`). */
  readonly path: readonly string[];
  readonly kind: SettingValueKind;
  /** Whether `null` is a value (`REPORT_SYNC_METRICS__PORT=null`: no server). */
  readonly nullable: boolean;
}

/** Every settings variable starts with this. */
export const SETTING_VARIABLE_PREFIX = 'REPORT_SYNC_';

/**
 * Every setting's environment variable, in the schema's order, derived from the settings schema
 * itself so a new key has its variable without anyone listing it. A record keyed by report type
 * (`formats`) has one variable per key: `formats.constituent.close` is `REPORT_SYNC_FORMATS__CONSTITUENT_CLOSE`.
 */
export function settingVariables(): readonly SettingVariable[] {
  const out: SettingVariable[] = [];
  const visit = (schema: z.core.$ZodType, path: readonly string[], nullable: boolean): void => {
    const { inner, nullable: innerNullable } = unwrap(schema);
    const def = inner._zod.def as unknown as SchemaDef;
    const isNullable = nullable || innerNullable;
    if (def.type === 'object' && def.shape) {
      for (const [key, child] of Object.entries(def.shape)) visit(child, [...path, key], false);
      return;
    }
    if (def.type === 'record' && def.keyType && def.valueType) {
      const keys = (def.keyType._zod.def as unknown as SchemaDef).entries;
      for (const key of Object.values(keys ?? {})) visit(def.valueType, [...path, String(key)], false);
      return;
    }
    out.push({ name: variableName(path), path, kind: valueKind(def), nullable: isNullable });
  };
  visit(settingsSchema, [], false);
  return out;
}

/** The variable of a key path: `['retry', 'baseDelayMs']` is `REPORT_SYNC_RETRY__BASE_DELAY_MS`. */
function variableName(path: readonly string[]): string {
  const segments = path.map((segment) =>
    segment
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .replace(/[^A-Za-z0-9]+/g, '_')
      .toUpperCase(),
  );
  return SETTING_VARIABLE_PREFIX + segments.join('__');
}

interface SchemaDef {
  readonly type: string;
  readonly shape?: Record<string, z.core.$ZodType>;
  readonly keyType?: z.core.$ZodType;
  readonly valueType?: z.core.$ZodType;
  readonly element?: z.core.$ZodType;
  readonly innerType?: z.core.$ZodType;
  readonly entries?: Record<string, string | number>;
}

function valueKind(def: SchemaDef): SettingValueKind {
  if (def.type === 'number') return 'number';
  if (def.type === 'boolean') return 'boolean';
  if (def.type === 'array' && def.element) {
    const element = unwrap(def.element).inner._zod.def as unknown as SchemaDef;
    return element.type === 'number' ? 'number-list' : 'string-list';
  }
  return 'string';
}

/** Looks through defaults, prefaults, optionals and nullables to the schema they wrap. */
function unwrap(schema: z.core.$ZodType): { inner: z.core.$ZodType; nullable: boolean } {
  let current = schema;
  let nullable = false;
  for (;;) {
    const def = current._zod.def as unknown as SchemaDef;
    if (def.type === 'nullable') nullable = true;
    if (!['default', 'prefault', 'optional', 'nullable', 'readonly'].includes(def.type) || !def.innerType) return { inner: current, nullable };
    current = def.innerType;
  }
}
