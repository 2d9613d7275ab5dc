import { describe, expect, it } from 'vitest';
import { prefixHashTag } from '../../../src/queue/prefix-hash-tag.js';

describe('prefixHashTag', () => {
  it.each([
    ['{report-sync}', 'report-sync'],
    ['{report-sync}:eu', 'report-sync'],
    ['prod:{report-sync}', 'report-sync'],
    ['{a}{b}', 'a'],
  ])('finds the tag Redis Cluster hashes keys under %s by', (prefix, tag) => {
    expect(prefixHashTag(prefix)).toBe(tag);
  });

  // Redis hashes the whole key then: keys under the prefix land in slots of their own.
  it.each(['report-sync', '{}report-sync', '{}{report-sync}', 'report-sync}', 'report-{sync'])('finds none in %s', (prefix) => {
    expect(prefixHashTag(prefix)).toBeUndefined();
  });
});
