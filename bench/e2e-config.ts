// The knobs of `npm run bench` (bench/e2e.ts), read from the environment once: a pure function of
// the variables, so a test can check what each setting turns into.
//
// BENCH_RUNS (200), BENCH_SIZES (KiB, "8,128"), BENCH_MODES ("native,file,git"), BENCH_RESUME_SAMPLES
// (3), BENCH_PROFILE_RUNS (40; 0 = no profile), BENCH_WARMUP_RUNS (10), BENCH_PROFILE_DIR (the
// .cpuprofile files; default a folder in the OS temp dir, kept), and for the cost model
// (bench/cost-model.ts): BENCH_COST_RUNS (runs of the qa and heavy workloads, 100; 0 = none),
// BENCH_COST_WORKLOADS ("qa,heavy").

import { tmpdir } from "node:os";
import { join } from "node:path";

export type Mode = "native" | "file" | "git";
export const MODES: readonly Mode[] = ["native", "file", "git"];

/** The workloads the cost model prices besides the timed one (`bench`): see bench/e2e-fixture.ts. */
export type CostWorkload = "qa" | "heavy";
export const COST_WORKLOADS: readonly CostWorkload[] = ["qa", "heavy"];

export interface BenchConfig {
  readonly runs: number;
  readonly sizes: readonly number[];
  readonly modes: readonly Mode[];
  readonly resumeSamples: number;
  readonly profileRuns: number;
  readonly warmupRuns: number;
  readonly profileDir: string;
  /** Runs counted as "the first" (p50 @20 …): 20, or all runs if fewer. */
  readonly first: number;
  /** The growth window: the last and the first `window` runs. */
  readonly window: number;
  /** Run counts the token totals are reported at (20 and 100, at most `runs`). */
  readonly tokenRuns: readonly number[];
  readonly costRuns: number;
  readonly costWorkloads: readonly CostWorkload[];
}

function intOf(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value.trim() === "") return fallback;
  const n = Number.parseInt(value, 10);
  if (!Number.isFinite(n)) throw new Error(`${name}=${value}: not a number`);
  return Math.max(0, n);
}

function listOf<T extends string>(env: NodeJS.ProcessEnv, name: string, fallback: string, known: readonly T[]): T[] {
  const raw = env[name] ?? fallback;
  const items = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const item of items)
    if (!known.includes(item as T)) throw new Error(`${name}: unknown "${item}" (known: ${known.join(", ")})`);
  return [...new Set(items)] as T[];
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  const runs = Math.max(2, intOf(env, "BENCH_RUNS", 200));
  const sizes = (env.BENCH_SIZES ?? "8,128").split(",").map((s) => Number(s.trim()));
  if (sizes.some((s) => !Number.isFinite(s) || s <= 0)) throw new Error(`BENCH_SIZES=${env.BENCH_SIZES}: KiB > 0`);
  return {
    runs,
    sizes,
    modes: listOf(env, "BENCH_MODES", "native,file,git", MODES),
    resumeSamples: intOf(env, "BENCH_RESUME_SAMPLES", 3),
    profileRuns: intOf(env, "BENCH_PROFILE_RUNS", 40),
    warmupRuns: intOf(env, "BENCH_WARMUP_RUNS", 10),
    profileDir: env.BENCH_PROFILE_DIR ?? join(tmpdir(), "sf-bench-e2e-profiles"),
    first: Math.min(20, runs),
    window: Math.min(20, Math.floor(runs / 2)),
    tokenRuns: [...new Set([20, 100].map((n) => Math.min(n, runs)))],
    costRuns: intOf(env, "BENCH_COST_RUNS", 100),
    costWorkloads: listOf(env, "BENCH_COST_WORKLOADS", "qa,heavy", COST_WORKLOADS),
  };
}
