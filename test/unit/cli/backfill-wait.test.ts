import { describe, expect, it } from 'vitest';
import { waitBeforeNextLookMs } from '../../../src/cli/backfill-command.js';

describe('backfill --wait: how often it reads the ledger', () => {
  it('looks twice a second when the ledger answers quickly, as over an ordinary range', () => {
    expect(waitBeforeNextLookMs(0)).toBe(500);
    expect(waitBeforeNextLookMs(12)).toBe(500);
    expect(waitBeforeNextLookMs(250)).toBe(500);
  });

  it('waits twice as long as the last look took when the ledger is slow to answer, as over millions of slices', () => {
    expect(waitBeforeNextLookMs(400)).toBe(800);
    expect(waitBeforeNextLookMs(2_100)).toBe(4_200);
  });
});
