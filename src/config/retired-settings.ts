import type { Settings } from './settings-schema.js';

/** Settings that were removed, each with what replaced it. */
const RETIRED: readonly { readonly key: string; readonly set: (settings: Settings) => boolean; readonly instead: string }[] = [
  {
    key: 'token.minLifetimeSeconds',
    set: (settings) => settings.token.minLifetimeSeconds !== undefined,
    instead: 'every token lifetime the identity provider states is believed now (one under 1 s as 1 s)',
  },
  {
    key: 'token.minRenewalIntervalMs',
    set: (settings) => settings.token.minRenewalIntervalMs !== undefined,
    instead: 'a 401 is judged per token now (its lifetime, and whether a 401 asked for it)',
  },
];

/**
 * One line per removed setting the configuration still sets: it is ignored, and the line says
 * what replaced it and to delete it. Logged at the start of every sync, never a reason to stop.
 */
export function retiredSettingsIn(settings: Settings): string[] {
  return RETIRED.filter((retired) => retired.set(settings)).map((retired) => `${retired.key} was removed and is ignored: ${retired.instead}; delete it from your settings`);
}
