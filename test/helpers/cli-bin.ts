import { fileURLToPath } from 'node:url';

/**
 * The `report-sync` executable the tests start: the compiled one, as published (`dist/`, built by
 * the suite's global set-up from the current sources, so it is never stale).
 */
export const CLI_BIN = fileURLToPath(new URL('../../dist/src/cli/bin.js', import.meta.url));
