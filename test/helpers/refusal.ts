import { SyncError } from '../../src/errors/sync-error.js';

/** The code and message `parse` throws for `data`; fails the test when it accepts the data or throws something else. */
export function refusalOf(parse: (data: unknown) => unknown, data: unknown): { code: string; message: string } {
  try {
    parse(data);
  } catch (error) {
    if (error instanceof SyncError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('the data was accepted');
}
