import { describe, expect, it } from 'vitest';
import { copyLineEnd, copyTextRow } from '../../../../src/warehouse/loading/copy-text-row.js';
import { copyTextValues } from '../../../../src/warehouse/loading/copy-text-values.js';

const LINE_END = copyLineEnd('0d9e3f4a-6b1c-4f2e-8a7d-5c3b2a1f0e9d');

describe('copyTextValues', () => {
  it('reads back what copyTextRow wrote: every text byte for byte, NULL apart from the empty string, without the load’s fields', () => {
    const rows = [
      ['back\\slash', 'tab\there', 'line\nbreak', 'carriage\rreturn', 'Windows\r\n', 'ends\\'],
      ['\\N', 'NULL', '\\t', '', null, 'Société 😀 𝄞'],
      ['12345678901234567890', '-0.000000000000000000000000000001', "'); drop table x; --", '  ', '\\\\n', 'x'],
    ];
    const text = rows.map((row) => copyTextRow(row, LINE_END)).join('');
    expect([...copyTextValues(text, LINE_END)]).toEqual(rows);
  });

  it('gives numbers back as their text, which the database reads as the number', () => {
    expect([...copyTextValues(copyTextRow([7, 1.5, null], LINE_END), LINE_END)]).toEqual([['7', '1.5', null]]);
  });

  it('reads nothing from no text, and refuses a line without the load’s fields (text written for another load)', () => {
    expect([...copyTextValues('', LINE_END)]).toEqual([]);
    expect(() => [...copyTextValues(copyTextRow(['a'], copyLineEnd('another load')), LINE_END)]).toThrow(/does not end with its load's fields/);
  });
});
