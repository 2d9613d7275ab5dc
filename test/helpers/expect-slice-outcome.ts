import { expect } from 'vitest';
import type { FaultRig, FaultRun } from './fault-rig.js';
import { REASON_LENGTH } from '../../src/cli/format-failures.js';
import { printableText } from '../../src/text/printable-text.js';
import type { Slice } from '../../src/slice/slice.js';
import { loggedErrorMessage } from './logged-error.js';

export interface ExpectedFailure {
  readonly code: string;
  /** What the ledger's error must say after the code. */
  readonly says: RegExp;
  readonly attempts: number;
  /** The longest the run may take. */
  readonly withinMs: number;
  /** The rows and ledger facts loaded before the bad answer, which must be exactly as they were. */
  readonly earlier?: { readonly rows: readonly Record<string, unknown>[]; readonly ledger: { content_sha256: string | null; row_count: number } };
}

/**
 * The fault suite's verdict on a failed slice: exit code 1, a `failed` ledger row with the stable
 * code and what to check, the same words on the console (summary and log line), the earlier rows
 * untouched (or none at all), and a run that ended in bounded time.
 */
export async function expectSliceFailed(fault: FaultRig, slice: Slice, run: FaultRun, expected: ExpectedFailure): Promise<void> {
  expect(run.code, run.stdout).toBe(1);
  expect(run.elapsedMs).toBeLessThan(expected.withinMs);
  const ledger = await fault.ledger(slice);
  expect(ledger.status).toBe('failed');
  expect(ledger.attempts).toBe(expected.attempts);
  expect(ledger.error).toMatch(new RegExp(`^${expected.code}: `));
  expect(ledger.error).toMatch(expected.says);
  // The console: the summary's failure groups name the code, the slice and the reason; so does the final log line.
  // The summary's printed layout is the product: checked whole.
  expect(run.stdout).toContain(`  ${expected.code}: 1 slice\n    portfolio ${slice.portfolioId}: 1 slice, e.g. ${slice.reportType} ${slice.reportDate}\n`);
  expect(run.stdout).toContain(`      ${printableText(ledger.error!, REASON_LENGTH)}\n`);
  const final = run.logLines.filter((line) => line.status === 'failed');
  expect(final).toHaveLength(1);
  expect(final[0]).toMatchObject({ code: expected.code, portfolioId: slice.portfolioId, attempts: expected.attempts });
  expect(loggedErrorMessage(final[0])).toMatch(expected.says);

  const rows = await fault.rows(slice);
  if (expected.earlier) {
    expect(rows).toEqual(expected.earlier.rows);
    expect(ledger.content_sha256).toBe(expected.earlier.ledger.content_sha256);
    expect(ledger.row_count).toBe(expected.earlier.ledger.row_count);
  } else {
    expect(rows).toEqual([]);
  }
}

/** A slice that ended `loaded` (after `attempts`), wholly: the ledger's row count is the rows the warehouse holds. */
export async function expectSliceLoaded(fault: FaultRig, slice: Slice, run: FaultRun, expected: { attempts: number; withinMs: number }) {
  expect(run.code, run.stdout).toBe(0);
  expect(run.elapsedMs).toBeLessThan(expected.withinMs);
  const ledger = await fault.ledger(slice);
  expect(ledger).toMatchObject({ status: 'loaded', attempts: expected.attempts, error: null });
  const rows = await fault.rows(slice);
  expect(rows).toHaveLength(ledger.row_count);
  return { ledger, rows };
}
