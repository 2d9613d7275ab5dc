import { describe, expect, it } from 'vitest';
import { countOf } from '../../../src/text/count-of.js';

describe('countOf', () => {
  it('says one thing in the singular and every other count in the plural', () => {
    expect(countOf(1, 'worker')).toBe('1 worker');
    expect(countOf(1, 'report type')).toBe('1 report type');
    expect(countOf(0, 'worker')).toBe('0 workers');
    expect(countOf(2, 'report type')).toBe('2 report types');
    expect(countOf(2196, 'slice')).toBe('2196 slices');
  });

  it('takes an irregular plural', () => {
    expect(countOf(1, 'entry', 'entries')).toBe('1 entry');
    expect(countOf(3, 'entry', 'entries')).toBe('3 entries');
  });
});
