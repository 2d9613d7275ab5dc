import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dotEnvHint, readDotEnvFile, type DotEnvNote } from '../../../src/config/dot-env-file.js';

const dir = mkdtempSync(join(tmpdir(), 'report-sync-dot-env-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** Writes `text` byte for byte (BOM and CRs as given) and reads it back. */
function read(text: string) {
  files += 1;
  const path = join(dir, `${files}.env`);
  writeFileSync(path, text, 'utf8');
  return readDotEnvFile(path);
}

describe('readDotEnvFile reads the file as it was written', () => {
  it('ignores a UTF-8 byte-order mark: the first variable keeps its name', () => {
    const { values, notes } = read('\uFEFFREPORT_BASE_URL=http://gw\nREPORT_REALM=r\n');
    expect(values).toEqual({ REPORT_BASE_URL: 'http://gw', REPORT_REALM: 'r' });
    expect(notes).toEqual([]);
  });

  it('takes CRLF and lone CR as line ends, also inside a quoted value', () => {
    expect(read('A=1\r\nB="x y"\r\nC=3\r\n').values).toEqual({ A: '1', B: 'x y', C: '3' });
    expect(read('A=1\rB=2\r').values).toEqual({ A: '1', B: '2' });
    expect(read('A="one\r\ntwo"\r\nB=2\r\n').values).toEqual({ A: 'one\ntwo', B: '2' });
  });

  it('reads export, blanks around = and before a quote, indented comments and a last line without a newline', () => {
    const { values, notes } = read('export A=1\nexport   B=2\nexport\tC=3\n  D = 4\nE=\t"e"\n   # F=6\nG="last"');
    expect(values).toEqual({ A: '1', B: '2', C: '3', D: '4', E: 'e', G: 'last' });
    expect(notes).toEqual([]);
  });

  it('keeps a # inside quotes of any kind, and a comment after the closing quote is no change', () => {
    const { values, notes } = read('A="a#b"\nB=\'c#d\'\nC=`e#f`\nD="g" # comment\nE=\'h\'#comment\n');
    expect(values).toEqual({ A: 'a#b', B: 'c#d', C: 'e#f', D: 'g', E: 'h' });
    expect(notes).toEqual([]);
  });

  it('keeps dotenv rules otherwise: trimmed unquoted values, \\n expanded in double quotes only, the last definition wins', () => {
    const { values } = read('A=  spaced value  \nB="x\\ny"\nC=\'x\\ny\'\nD=b=c\nE=\nE=again\n');
    expect(values).toEqual({ A: 'spaced value', B: 'x\ny', C: 'x\\ny', D: 'b=c', E: 'again' });
  });
});

describe('readDotEnvFile notes the values a rule changed, by line and name only', () => {
  it('an unquoted # glued to the text before it cuts the value: noted with its line', () => {
    const { values, notes } = read('# credentials\nREPORT_USERNAME=user\n\nREPORT_PASSWORD=abc#123\nREPORT_CLIENT_SECRET=#starts\n');
    expect(values).toMatchObject({ REPORT_PASSWORD: 'abc', REPORT_CLIENT_SECRET: '' });
    expect(notes).toEqual([
      { line: 4, variable: 'REPORT_PASSWORD', rule: 'comment' },
      { line: 5, variable: 'REPORT_CLIENT_SECRET', rule: 'comment' },
    ]);
  });

  it('a comment after a blank is taken as meant, and not noted', () => {
    const { values, notes } = read('REPORT_REALM=r # a comment\nREPORT_PASSWORD=   # fill in\nREPORT_USERNAME=u\t#tabbed\n');
    expect(values).toMatchObject({ REPORT_REALM: 'r', REPORT_PASSWORD: '' });
    expect(notes).toEqual([]);
  });

  it('counts lines of a CRLF file with a BOM as an editor does', () => {
    expect(read('\uFEFFA=1\r\nB=2\r\nREPORT_PASSWORD=pa#ss\r\n').notes).toEqual([{ line: 3, variable: 'REPORT_PASSWORD', rule: 'comment' }]);
  });

  it('text after a closing quote is dropped', () => {
    const { values, notes } = read("REPORT_PASSWORD='a'b'\nREPORT_USERNAME=\"x\"y\n");
    expect(values).toMatchObject({ REPORT_PASSWORD: 'a', REPORT_USERNAME: 'x' });
    expect(notes.map((note) => note.rule)).toEqual(['text-after-quote', 'text-after-quote']);
  });

  it('a quote never closed stays in the value', () => {
    const { values, notes } = read('REPORT_PASSWORD="abc\nNEXT=1\n');
    expect(values).toEqual({ REPORT_PASSWORD: '"abc', NEXT: '1' });
    expect(notes).toEqual([{ line: 1, variable: 'REPORT_PASSWORD', rule: 'unclosed-quote' }]);
  });

  it('a quote closed on a later line takes the lines between into the value, then reading goes on', () => {
    const { values, notes } = read('REPORT_PASSWORD="abc\nREPORT_USERNAME=u\nREPORT_REALM="r"\nNEXT=1\n');
    expect(values).toEqual({ REPORT_PASSWORD: 'abc\nREPORT_USERNAME=u\nREPORT_REALM=', NEXT: '1' });
    expect(notes).toEqual([{ line: 1, variable: 'REPORT_PASSWORD', rule: 'multi-line' }]);
  });

  it('\\n in double quotes becomes a line break', () => {
    const { values, notes } = read('REPORT_PASSWORD="ab\\ncd"\n');
    expect(values.REPORT_PASSWORD).toBe('ab\ncd');
    expect(notes).toEqual([{ line: 1, variable: 'REPORT_PASSWORD', rule: 'line-break-escape' }]);
  });

  it('notes only the definition that counts', () => {
    expect(read("REPORT_PASSWORD=abc#123\nREPORT_PASSWORD='abc#123'\n").notes).toEqual([]);
    expect(read("REPORT_PASSWORD='abc#123'\nREPORT_PASSWORD=abc#123\n").notes).toEqual([{ line: 2, variable: 'REPORT_PASSWORD', rule: 'comment' }]);
  });

  it('never holds any part of a value', () => {
    const { notes } = read("REPORT_PASSWORD=secretpart#hiddenpart\nREPORT_CLIENT_SECRET='q'tail'\nREPORT_USERNAME=\"open\n");
    expect(notes).toHaveLength(3);
    expect(JSON.stringify(notes)).not.toMatch(/secretpart|hiddenpart|tail|open|'q'/);
  });
});

describe('dotEnvHint', () => {
  const notes: DotEnvNote[] = [
    { line: 2, variable: 'DATABASE_URL', rule: 'comment' },
    { line: 4, variable: 'REPORT_PASSWORD', rule: 'comment' },
  ];

  it('names the line and the REPORT_* variable, the rule, and what to do, when the upstream refuses what it was sent', () => {
    // The hint is the product: checked whole.
    expect(dotEnvHint(notes, 'AUTH_REJECTED')).toBe(
      '.env line 4 (REPORT_PASSWORD) has a # outside quotes, which starts a comment, so the value was cut there: put the value in single quotes if the # belongs to it',
    );
    expect(dotEnvHint(notes, 'EXPORT_UNAUTHORIZED')).toContain('.env line 4 (REPORT_PASSWORD)');
    expect(dotEnvHint(notes, 'EXPORT_FORBIDDEN')).toContain('.env line 4 (REPORT_PASSWORD)');
  });

  it('says nothing for other errors, for other variables, or for a name that is not a variable name', () => {
    expect(dotEnvHint(notes, 'EXPORT_SERVER_ERROR')).toBeUndefined();
    expect(dotEnvHint(notes, undefined)).toBeUndefined();
    expect(dotEnvHint([notes[0]!], 'AUTH_REJECTED')).toBeUndefined();
    expect(dotEnvHint([{ line: 1, variable: 'REPORT_PASSWORD abc', rule: 'comment' }], 'AUTH_REJECTED')).toBeUndefined();
  });

  it('joins several notes', () => {
    const hint = dotEnvHint([...notes, { line: 7, variable: 'REPORT_CLIENT_SECRET', rule: 'unclosed-quote' }], 'AUTH_REJECTED');
    expect(hint).toMatch(/^\.env line 4 \(REPORT_PASSWORD\) .*; \.env line 7 \(REPORT_CLIENT_SECRET\) opens a quote it never closes/);
  });
});
