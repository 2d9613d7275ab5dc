import { LosslessNumber, parse } from 'lossless-json';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
/** The mark, written as a JSON escape (a raw control character is not allowed in a JSON string). */
const MARK = '\\u0001';
const MARK_CODE = 0x01;

/**
 * Parses one JSON value as lossless-json's `parse` does, but through the faster native `JSON.parse`:
 * number tokens are marked with a leading U+0001 (no raw JSON string holds one) and turned back into
 * `LosslessNumber`s. Anything unusual goes to lossless-json itself, so messages are unchanged;
 * `maxDepth` is enforced before the walk could recurse that deep.
 */
export function parseJsonRecord(text: string, maxDepth = Infinity): unknown {
  const rewritten = rewrite(text, maxDepth);
  if (rewritten !== undefined) {
    let value: unknown;
    try {
      value = JSON.parse(rewritten.text);
    } catch {
      return parse(text);
    }
    const walk = { keys: 0, ok: true };
    const revived = revive(value, walk);
    if (walk.ok && walk.keys === rewritten.keys) return revived;
  }
  return parse(text);
}

/**
 * The text with numbers marked, and the number of object keys; undefined if not JSON-shaped.
 * @throws Error when containers nest deeper than `maxDepth`
 */
function rewrite(text: string, maxDepth: number): { text: string; keys: number } | undefined {
  // Which containers are open: true for an object.
  const inObject: boolean[] = [];
  let expectingKey = false;
  let keys = 0;
  let out = '';
  let copied = 0;
  const length = text.length;
  for (let i = 0; i < length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = text.indexOf('"', i + 1);
      while (end > 0 && isEscaped(text, end)) end = text.indexOf('"', end + 1);
      if (end < 0) return undefined;
      if (expectingKey) keys += 1;
      else if (text.charCodeAt(i + 1) === BACKSLASH) {
        // An escape might decode to the mark: two marks say "a real string", and both go again.
        out += text.slice(copied, i + 1);
        out += MARK + MARK;
        copied = i + 1;
      }
      i = end;
    } else if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
      // A number where a key belongs would become a valid key once quoted: not ours to accept.
      if (expectingKey) return undefined;
      let j = i + 1;
      while (j < length && isNumberChar(text.charCodeAt(j))) j += 1;
      out += text.slice(copied, i);
      out += `"${MARK}`;
      out += text.slice(i, j);
      out += '"';
      copied = j;
      i = j - 1;
    } else if (c === OPEN_BRACE) {
      if (inObject.push(true) > maxDepth) throw new Error(`nested deeper than ${maxDepth} levels`);
      expectingKey = true;
    } else if (c === OPEN_BRACKET) {
      if (inObject.push(false) > maxDepth) throw new Error(`nested deeper than ${maxDepth} levels`);
      expectingKey = false;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      inObject.pop();
      expectingKey = false;
    } else if (c === COMMA) {
      expectingKey = inObject[inObject.length - 1] === true;
    } else if (c === COLON) {
      expectingKey = false;
    }
  }
  return { text: copied === 0 ? text : out + text.slice(copied), keys };
}

/** True when the quote at `at` follows an odd number of backslashes. */
function isEscaped(text: string, at: number): boolean {
  let backslashes = 0;
  for (let k = at - 1; text.charCodeAt(k) === BACKSLASH; k -= 1) backslashes += 1;
  return backslashes % 2 === 1;
}

function isNumberChar(c: number): boolean {
  // Digits, ".", "e", "E", "+", "-": more than JSON allows in a row; LosslessNumber checks the token.
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === MINUS;
}

/** Undoes the marks in place; counts object keys; `ok` turns false on a number JSON does not allow. */
function revive(value: unknown, walk: { keys: number; ok: boolean }): unknown {
  if (typeof value === 'string') {
    if (value.charCodeAt(0) !== MARK_CODE) return value;
    if (value.charCodeAt(1) === MARK_CODE) return value.slice(2);
    try {
      return new LosslessNumber(value.slice(1));
    } catch {
      walk.ok = false;
      return value;
    }
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) value[i] = revive(value[i], walk);
    return value;
  }
  const record = value as Record<string, unknown>;
  // A key "__proto__" is an own data property here (JSON.parse defines it), so reading and
  // assigning it touches that property, not the prototype.
  for (const key in record) {
    walk.keys += 1;
    record[key] = revive(record[key], walk);
  }
  return record;
}
