import { describe, expect, it } from "vitest";
import { readConfig } from "../../bench/e2e-config.ts";

describe("bench config", () => {
  it("defaults to 200 runs at 8 and 128 KiB in all three modes, and 100 cost runs of qa and heavy", () => {
    const config = readConfig({});
    expect(config).toMatchObject({
      runs: 200,
      sizes: [8, 128],
      modes: ["native", "file", "git"],
      resumeSamples: 3,
      profileRuns: 40,
      warmupRuns: 10,
      first: 20,
      window: 20,
      tokenRuns: [20, 100],
      costRuns: 100,
      costWorkloads: ["qa", "heavy"],
    });
    expect(config.profileDir).toMatch(/sf-bench-e2e-profiles$/);
  });

  it("derives the windows from a small run count", () => {
    const config = readConfig({ BENCH_RUNS: "30", BENCH_SIZES: "8", BENCH_MODES: "native, file" });
    expect(config).toMatchObject({ runs: 30, sizes: [8], modes: ["native", "file"], first: 20, window: 15 });
    expect(config.tokenRuns).toEqual([20, 30]);
    // Fewer than 20 runs: both token points collapse into one.
    expect(readConfig({ BENCH_RUNS: "12" }).tokenRuns).toEqual([12]);
    expect(readConfig({ BENCH_RUNS: "1" }).runs).toBe(2);
  });

  it("reads zero as off and an empty value as the default", () => {
    const config = readConfig({ BENCH_PROFILE_RUNS: "0", BENCH_RESUME_SAMPLES: "", BENCH_COST_WORKLOADS: "" });
    expect(config.profileRuns).toBe(0);
    expect(config.resumeSamples).toBe(3);
    expect(config.costWorkloads).toEqual([]);
  });

  it("refuses what it cannot run", () => {
    expect(() => readConfig({ BENCH_MODES: "native,gitt" })).toThrow(/unknown "gitt"/);
    expect(() => readConfig({ BENCH_SIZES: "8,x" })).toThrow(/BENCH_SIZES/);
    expect(() => readConfig({ BENCH_RUNS: "many" })).toThrow(/BENCH_RUNS/);
    expect(() => readConfig({ BENCH_COST_WORKLOADS: "qa,huge" })).toThrow(/unknown "huge"/);
  });
});
