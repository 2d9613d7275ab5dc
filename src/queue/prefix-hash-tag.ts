/**
 * The hash tag a key prefix gives every key under it, as Redis Cluster reads one: the text between
 * the first "{" and the first "}" after it, when not empty. Undefined when the prefix has none, or
 * when its tag would only close in the rest of each key (`a{b`), so keys under it need not share
 * a slot.
 */
export function prefixHashTag(prefix: string): string | undefined {
  const open = prefix.indexOf('{');
  if (open < 0) return undefined;
  const close = prefix.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return prefix.slice(open + 1, close);
}
