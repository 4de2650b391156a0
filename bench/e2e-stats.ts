// Small statistics of the benchmark reports (bench/e2e*.ts).

export const round = (x: number, d = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);

/** The q-quantile by the nearest-rank method (NaN for no values). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
export const p50 = (xs: readonly number[]) => quantile(xs, 0.5);
export const p95 = (xs: readonly number[]) => quantile(xs, 0.95);
export const mean = (xs: readonly number[]) => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
export const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
