import { describe, expect, it } from 'vitest';
import { ExportError, SyncError, toSyncError, WarehouseError } from '../../../src/errors/sync-error.js';
import { createLogger } from '../../../src/logging/logger.js';
import { QualityCheckError } from '../../../src/quality/quality-check-error.js';
import type { SliceCheckName } from '../../../src/quality/slice-check-result.js';
import { CapturedStream, logLines } from '../../helpers/captured-io.js';

const PASSWORD = 'correct-horse-battery-staple';
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\r\nFORGED: all slices loaded';

describe('errors logged under err', () => {
  it('of an expected failure: its code and its message with every cause, in one compact line without a stack', () => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty: false, destination: out });
    const socket = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const error = new ExportError('EXPORT_NETWORK', 'the export service broke off the transfer: it is retried', { cause: socket, status: 200 });
    logger.warn({ code: error.code, err: error }, 'attempt failed, will retry');
    const [line] = logLines(out);
    expect(line).toMatchObject({ level: 40, code: 'EXPORT_NETWORK', msg: 'attempt failed, will retry' });
    expect(line!.err).toEqual({
      type: 'ExportError',
      code: 'EXPORT_NETWORK',
      status: 200,
      message: 'the export service broke off the transfer: it is retried: read ECONNRESET',
    });
    expect(out.text).not.toContain('    at ');
  });

  it('of a file refused by a check: one message, none of the results it carries, and a bounded size', () => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty: false, destination: out });
    const slice = { portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-05-06' } as const;
    const result = (check: SliceCheckName, outcome: 'pass' | 'fail') => ({
      check,
      severity: 'fail' as const,
      outcome,
      measured: 0.4,
      threshold: 0.001,
      message: `${check}: ${'measured at length; '.repeat(8)}`,
    });
    const error = new QualityCheckError(slice, '2024-05-06_1001_constituents.zip', [
      result('weightsSum', 'fail'),
      result('duplicateIsin', 'pass'),
      result('rowCountDrop', 'pass'),
      result('effectiveDate', 'pass'),
      result('positiveValues', 'pass'),
    ]);
    logger.error({ portfolioId: 1001, status: 'failed', code: error.code, err: error }, 'slice failed');
    const text = out.text.trim();
    expect(text.split('\n')).toHaveLength(1);
    expect(logLines(out)[0]!.err).toEqual({ type: 'QualityCheckError', code: 'QUALITY_CHECK_FAILED', message: error.message });
    expect(text.split('weightsSum: ').length - 1).toBe(1);
    expect(text).not.toContain('duplicateIsin');
    expect(Buffer.byteLength(text)).toBeLessThan(1_000);
  });

  it.each([
    ['a bug thrown as is', () => new TypeError("Cannot read properties of undefined (reading 'rows')")],
    ['a surprise kept as UNEXPECTED', () => toSyncError(new RangeError('Invalid array length'))],
  ])('of an unexpected error (%s): its stack, its causes included', (_, make) => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty: false, destination: out });
    const error = make();
    logger.error({ err: error }, 'worker error');
    const err = logLines(out)[0]!.err as { message: string; stack: string };
    expect(err.message).toContain(error.message);
    expect(err.stack).toMatch(/\n\s+at /);
    if (error instanceof SyncError) expect(err.stack).toContain('caused by: RangeError: Invalid array length');
  });

  it('follow a chain of SyncErrors to its root', () => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty: false, destination: out });
    const root = new WarehouseError('WAREHOUSE_UNAVAILABLE', 'the warehouse is locked (SQLITE_BUSY)');
    const error = new SyncError('EXPORT_SERVER_ERROR', 'answered 503; this failure is NOT in the ledger', { cause: root });
    logger.error({ code: error.code, err: error }, 'slice failed');
    const err = logLines(out)[0]!.err as Record<string, unknown>;
    expect(err.code).toBe('EXPORT_SERVER_ERROR');
    // What is checked is the joining: the error's own message, then its cause's.
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
