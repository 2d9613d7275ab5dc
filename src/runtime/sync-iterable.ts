/**
 * Whether `items` can be read without waiting (an array, a plain generator) rather than only as
 * they come: a reader then loops over them directly, with no promise per item.
 */
export function isSyncIterable<T>(items: Iterable<T> | AsyncIterable<T>): items is Iterable<T> {
  return !(Symbol.asyncIterator in items);
}
