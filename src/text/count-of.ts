/** `1 slice`, `2 slices`, `1 report type`: a count with its noun, plural unless the count is one. */
export function countOf(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}
