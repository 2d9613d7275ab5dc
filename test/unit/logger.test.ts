import { describe, expect, it } from 'vitest';
import { ExportError, SyncError, WarehouseError } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import { CapturedStream, logLines } from '../helpers/captured-io.js';

const PASSWORD = 'correct-horse-battery-staple';
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\r\nFORGED: all slices loaded';

describe('errors logged under err', () => {
  it('carry their code, their message with every cause, and their stacks', () => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty: false, destination: out });
    const socket = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const error = new ExportError('EXPORT_NETWORK', 'the export service broke off the transfer: it is retried', { cause: socket, status: 200 });
    logger.warn({ code: error.code, err: error }, 'attempt failed, will retry');
    const [line] = logLines(out);
    expect(line).toMatchObject({ level: 40, code: 'EXPORT_NETWORK', msg: 'attempt failed, will retry' });
    expect(line!.err).toMatchObject({
      type: 'ExportError',
      code: 'EXPORT_NETWORK',
      status: 200,
      message: 'the export service broke off the transfer: it is retried: read ECONNRESET',
    });
    const stack = String((line!.err as { stack: string }).stack);
    expect(stack).toMatch(/^ExportError: the export service broke off the transfer/);
    expect(stack).toContain('caused by: Error: read ECONNRESET');
  });

  it('follow a chain of SyncErrors to its root', () => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty: false, destination: out });
    const root = new WarehouseError('WAREHOUSE_UNAVAILABLE', 'the warehouse is locked (SQLITE_BUSY)');
    const error = new SyncError('EXPORT_SERVER_ERROR', 'answered 503; this failure is NOT in the ledger', { cause: root });
    logger.error({ code: error.code, err: error }, 'slice failed');
    const err = logLines(out)[0]!.err as Record<string, unknown>;
    expect(err.code).toBe('EXPORT_SERVER_ERROR');
    expect(err.message).toBe('answered 503; this failure is NOT in the ledger: the warehouse is locked (SQLITE_BUSY)');
  });

  it.each([false, true])('keep secrets and control characters of a cause out of the output (pretty: %s)', (pretty) => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty, destination: out, secrets: [PASSWORD] });
    // A cause is not a SyncError: nothing escaped or censored it when it was made.
    const cause = new Error(`upstream echoed password=${PASSWORD} and ${HOSTILE}`);
    logger.error({ code: 'AUTH_UNAVAILABLE', err: new SyncError('AUTH_UNAVAILABLE', 'identity provider unavailable', { cause }) }, 'identity provider unavailable');
    logger.flush();
    expect(out.text).toContain('identity provider unavailable');
    expect(out.text).not.toContain(PASSWORD);
    expect(out.text).not.toMatch(/\u001b|\u0007|\u009b|\r/);
    expect(out.text).not.toMatch(/^FORGED/m);
  });
});
