import { isLosslessNumber, parse } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { parseJsonRecord } from '../../../src/extract/parse-json-record.js';

/** What lossless-json itself gives for a text: its value, or its error message. */
function reference(text: string): { value?: unknown; error?: string } {
  try {
    return { value: parse(text) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function ours(text: string): { value?: unknown; error?: string } {
  try {
    return { value: parseJsonRecord(text) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe('parseJsonRecord', () => {
  it('keeps every digit of every number, as LosslessNumbers', () => {
    const value = parseJsonRecord('{"a":1234.56789012345678901,"b":-1.5E-7,"c":0,"d":[1e400,{"e":-0.000}],"s":"12.50"}') as Record<string, unknown>;
    expect(isLosslessNumber(value.a)).toBe(true);
    expect(String(value.a)).toBe('1234.56789012345678901');
    expect(String(value.b)).toBe('-1.5E-7');
    expect(String((value.d as unknown[])[0])).toBe('1e400');
    expect(String(((value.d as unknown[])[1] as Record<string, unknown>).e)).toBe('-0.000');
    expect(value.s).toBe('12.50');
    expect(value).toEqual(parse('{"a":1234.56789012345678901,"b":-1.5E-7,"c":0,"d":[1e400,{"e":-0.000}],"s":"12.50"}'));
  });

  it('keeps strings that start with escapes, even of the mark itself, and keys that look like numbers', () => {
    const text = '{"a":"\\u0001","b":"\\u00011.5","c":"\\u0001\\u0001x","d":"\\"q\\"","e":"\\\\","f":"a \\"2\\" \\\\","":"","3":"x","k":{"n":["\\n",null,true,false]}}';
    const value = parseJsonRecord(text) as Record<string, unknown>;
    expect(value.a).toBe('\u0001');
    expect(value.b).toBe('\u00011.5');
    expect(value.c).toBe('\u0001\u0001x');
    expect(value).toEqual(parse(text));
  });

  it('keeps a "__proto__" key as data, as lossless-json does', () => {
    const text = '{"__proto__":{"polluted":1},"a":2}';
    const value = parseJsonRecord(text) as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(value).toEqual(parse(text));
  });

  it.each([
    '{"a":1,"a":2}',
    '{"a":1,"a":1}',
    '{"a":{"b":1,"b":[2]}}',
    '{"a":NaN}',
    '{"a":01}',
    '{"a":1.}',
    '{"a":.5}',
    '{"a":+1}',
    '{"a":-}',
    '{"a":1e}',
    '{"a":1.2.3}',
    '{"a":--1}',
    '{1:2}',
    '{"a" 2}',
    '{"a":2,}',
    '{"a":tru}',
    '{"a":"x\\q"}',
    '{"a":"line\nbreak"}',
    '{"a":[1,,2]}',
    "{'a':1}",
  ])('behaves exactly as lossless-json on %j', (text) => {
    expect(ours(text)).toEqual(reference(text));
  });

  it('agrees with lossless-json on thousands of generated records', () => {
    let seed = 7;
    const random = () => {
      seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0;
      return seed / 4_294_967_296;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const atoms = ['0', '-0.0', '12.5000', '123456789012345678901234567890', '1E+5', '"n"', '"\\u0001"', '"\\u00015"', '"a,b:c"', '"\\"}"', '"x\\\\"', 'true', 'null', '{}', '[]'];
    const value = (depth: number): string => {
      const roll = random();
      if (depth > 3 || roll < 0.6) return pick(atoms);
      if (roll < 0.8) return `[${Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1)).join(',')}]`;
      return object(depth + 1);
    };
    const object = (depth: number): string =>
      `{${Array.from({ length: Math.floor(random() * 5) }, () => `${pick(['"a"', '"b"', '"n"', '"1"', '"key"'])}:${value(depth)}`).join(', ')}}`;
    for (let i = 0; i < 3000; i += 1) {
      const text = object(0);
      expect(ours(text), text).toEqual(reference(text));
    }
  });
});
