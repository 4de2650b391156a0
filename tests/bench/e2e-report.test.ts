import { describe, expect, it } from "vitest";
import { readConfig } from "../../bench/e2e-config.ts";
import {
  computeTargets,
  phaseText,
  summarize,
  table,
  targetTable,
  tokensAt,
  type Summary,
} from "../../bench/e2e-report.ts";
import type { ResumeSample, RunRecord } from "../../bench/e2e-run.ts";

const config = readConfig({ BENCH_RUNS: "4", BENCH_SIZES: "8", BENCH_RESUME_SAMPLES: "1" });

/** Four runs of `ms` each; every run sends three requests of `tokens` of which `cached` hit. */
function runs(ms: number[], tokens: number, cached: number, extra: Partial<RunRecord> = {}): RunRecord[] {
  return ms.map((m, i) => ({
    run: i + 1,
    ms: m,
    git: [],
    cohorts: 0,
    readGit: 0,
    storeReads: 0,
    phases: { "State Flow (all hooks and tools)": m / 2, "Pi itself (run minus State Flow)": m / 2 },
    priced: [],
    requests: [0, 1, 2].map(() => ({ tokens, cached, bytes: tokens * 4 })),
    frozenRequests: [0, 1, 2].map(() => ({ tokens, cached: tokens, bytes: tokens * 4 })),
    anatomy: { tools: 700, system: 600, firstMessage: 10, rest: tokens - 1310 },
    ...extra,
  }));
}

const resume = (firstContextMs: number, git = 0): ResumeSample[] => [
  {
    firstContextMs,
    openMs: 1,
    createMs: 1,
    bindMs: 1,
    importMs: 1,
    processWallMs: 1000,
    processToFirstContextMs: 1,
    git: Array.from({ length: git }, () => "rev-parse --show-toplevel"),
    contextBytes: 100,
    restoredStep: 8,
    errors: [],
  },
];

function summaries(): Map<string, Summary> {
  const native = summarize({ mode: "native", runs: runs([10, 10, 10, 10], 2000, 1800) }, resume(50), config);
  const file = summarize({ mode: "file", runs: runs([14, 14, 14, 14], 2000, 1000) }, resume(100), config);
  const gitRuns = runs([50, 50, 50, 50], 2000, 1000, {
    git: ["add -A", "cat-file --batch-check"],
    cohorts: 2,
    readGit: 1,
    storeReads: 1,
    bareMs: 30,
    bareGit: 2,
  });
  const git = summarize({ mode: "git", runs: gitRuns, bare: true }, resume(200, 3), config);
  return new Map([
    ["native-8KiB", native],
    ["file-8KiB", file],
    ["git-8KiB", git],
  ]);
}

describe("bench report", () => {
  it("summarizes a case's runs", () => {
    const git = summaries().get("git-8KiB")!;
    expect(git.runMs).toEqual({ runs4: { p50: 50, p95: 50 } });
    expect(git.gitPerRun).toEqual({ mean: 2, max: 2 });
    expect(git.gitPerCohort).toBe(1);
    expect(git.gitCommandsPerRun).toEqual({ "add -A": 1, "cat-file --batch-check": 1 });
    expect(git.bareCommitMs).toEqual({ p50: 30, p95: 30 });
    // 12 requests of 2,000 tokens, 1,000 of each cached at 0.1: 12 × 1,100.
    expect(tokensAt(git, 4)).toEqual({ uncached: 24000, cached: 13200 });
    expect(git.tokens.withinRunCacheHit.p50).toBe(0.5);
    expect(git.resume.gitProcesses).toBe(3);
    expect(summaries().get("native-8KiB")!.bareCommitMs).toBeUndefined();
  });

  it("computes each target from the summaries", () => {
    const { targets, bounds } = computeTargets(summaries(), config);
    const byName = Object.fromEntries(targets.map((t) => [t.target, t]));
    expect(byName["8 KiB: file-only run p50 / native at 4 runs"]).toMatchObject({ value: 1.4, pass: true });
    // (50 − 10) / 30
    expect(byName["8 KiB: (Git run p50 − native) / bare commit p50 at 4 runs"]).toMatchObject({
      value: 1.333,
      limit: "≤ 1.3",
      pass: false,
    });
    expect(byName["8 KiB: git processes per accepted cohort"]).toMatchObject({ value: 1, pass: true });
    expect(byName["8 KiB: git processes in store reads on the hot path, per run"]!.pass).toBe(false);
    expect(byName["8 KiB: Git resume git processes"]).toMatchObject({ value: 3, pass: false });
    expect(byName["8 KiB: file-only resume first context / native"]).toMatchObject({ value: 2, pass: true });
    expect(byName["8 KiB: Git resume first context / native"]).toMatchObject({ value: 4, pass: false });
    // State Flow 12 × 1,100 against native 12 × (200 + 180).
    expect(byName["8 KiB: file-only token cost with prefix cache / native over 4 runs"]).toMatchObject({
      value: 2.895,
      pass: false,
    });
    expect(byName["8 KiB: file-only within-run cache hit (p50 over runs)"]).toMatchObject({
      value: 0.5,
      limit: "≥ 0.9",
      pass: false,
    });
    // Frozen: every request fully cached, 12 × 200 against 12 × 380.
    expect(bounds[0]![0]).toBe("8 KiB: file-only token cost with prefix cache / native over 4 runs");
    expect(bounds[0]![1]).toBeCloseTo(200 / 380, 6);
    expect(targetTable(targets)).toContain("FAIL");
  });

  it("leaves out the targets of a mode that did not run", () => {
    const only = readConfig({ BENCH_RUNS: "4", BENCH_SIZES: "8", BENCH_MODES: "native,file" });
    const names = computeTargets(summaries(), only).targets.map((t) => t.target);
    expect(names.some((n) => n.includes("Git"))).toBe(false);
    expect(names.length).toBeGreaterThan(3);
  });

  it("pads tables and drops a State Flow split equal to its total", () => {
    expect(
      table([
        ["a", "bb"],
        ["ccc", "d"],
      ]),
    ).toBe("a    bb\nccc  d \n\n");
    const text = phaseText("t", { run: 5, "x [State Flow]": 5, x: 5, "y (calls)": 2 }, 10);
    expect(text).not.toContain("[State Flow]");
    expect(text).toContain("calls per run: y 2");
  });
});
