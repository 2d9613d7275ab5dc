import { describe, expect, it } from 'vitest';
import { copyTextRow } from '../../../../src/warehouse/loading/copy-text-row.js';

describe('copyTextRow', () => {
  it('separates fields with tabs, ends the line, and writes NULL as \\N', () => {
    expect(copyTextRow([7, 'constituent.close', null, '1.50', undefined])).toBe('7\tconstituent.close\t\\N\t1.50\t\\N\n');
  });

  it('keeps an empty string empty, distinct from NULL', () => {
    expect(copyTextRow(['', null])).toBe('\t\\N\n');
  });

  it('escapes the four characters COPY text format reads specially, and nothing else', () => {
    expect(copyTextRow(['back\\slash', 'tab\there', 'line\nbreak', 'carriage\rreturn'])).toBe('back\\\\slash\ttab\\there\tline\\nbreak\tcarriage\\rreturn\n');
    expect(copyTextRow(['\\N', '\\.', 'a,b "c" \'d\' Société 😀'])).toBe('\\\\N\t\\\\.\ta,b "c" \'d\' Société 😀\n');
  });

  it('ends the row with the given text instead of the line end: the fields every row shares, already in COPY form', () => {
    const end = '\t0d9e3f4a-6b1c-4f2e-8a7d-5c3b2a1f0e9d\n';
    expect(copyTextRow([7, null], end)).toBe('7\t\\N\t0d9e3f4a-6b1c-4f2e-8a7d-5c3b2a1f0e9d\n');
    // A row that needs escapes is written again: the end stays as given.
    expect(copyTextRow(['tab\there'], end)).toBe('tab\\there\t0d9e3f4a-6b1c-4f2e-8a7d-5c3b2a1f0e9d\n');
  });
});
