import { describe, expect, it } from 'vitest';
import { loadBenchmarks } from './run-benchmarks.js';

// A tiny run of every benchmark, so they never rot: the sizes are too small for the targets to mean anything,
// so only the shape and the sanity of each row is checked here.
const benchmarks = await loadBenchmarks();

describe('benchmarks at smoke size', () => {
  it('finds the five benchmarks of the issue, and the start-up one', () => {
    expect(benchmarks.map((bench) => bench.order)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  for (const bench of benchmarks) {
    it(`runs ${bench.name}`, { timeout: 120_000 }, async () => {
      const rows = await bench.run('smoke');
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        expect(row.product).toMatch(/\d/);
        if (row.ratio !== null) {
          expect(Number.isFinite(row.ratio)).toBe(true);
          expect(row.ratio).toBeGreaterThan(0);
        }
      }
    });
  }
});
