// npm run bench — State Flow end to end: real Pi 0.84 AgentSessions with Pi's faux model, one run
// being a native `read` of a 4 KiB file → a durable state write → the answer (three inferences),
// in three cases, all interleaved in one process (each round runs every case once, in a rotated
// order, so all of them see the same machine load):
//
//   native     Pi without State Flow: read → Pi's own `edit` of a state file of the same size (the
//              same one-note change the patch makes) → answer. The closest native equivalent of a
//              durable state write, with the same number of inferences and tool calls; its memory
//              is Pi's growing transcript.
//   file-only  State Flow, git absent from its PATH: read → patch_state {session…, final:true} → answer.
//   git        State Flow with its Git store, same run.
//
// State is 8 KiB and 128 KiB (half stable cwd contract, half session notes; each run replaces one
// note). Per case: run p50/p95 at 20 and at all runs, growth (p50 of the last 20 / first 20 runs),
// git processes per run, per accepted cohort and per store read (a `git` wrapper first on State
// Flow's PATH counts every process), a bare `git add -A` + `git commit` of the files the run changed
// (right after each Git run, in a scratch repository, through the same wrapper), resume in a fresh
// OS process (first-context time and git processes), context bytes, and the token model of
// bench/e2e-tokens.ts. Then where a run's time goes: phase wall times from bench/e2e-phases.ts for
// every measured run, and a CPU profile of extra runs per case (bench/e2e-profile.ts).
//
// Environment: see bench/e2e-config.ts. The pieces: e2e-fixture.ts (state, inputs, run scripts),
// e2e-run.ts (cases, runs, resume), e2e-report.ts (summaries, targets, tables). Prints
// tables and ends with one line `BENCH {json}`. Reports targets as ratios with pass/fail; never
// asserts. docs/performance.md has the figures of one run and how to read them.

import { readFileSync, mkdirSync, rmSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { readConfig } from "./e2e-config.ts";
import { dirBytes, storeFiles } from "./e2e-fixture.ts";
import { installPhaseWrappers, missing, setDetail } from "./e2e-phases.ts";
import { profiled, summarizeProfile, type CpuProfile, type ProfileSummary } from "./e2e-profile.ts";
import { allCostFigures, costTargets, costText, type CostCase } from "./e2e-cost.ts";
import { benchResult, computeTargets, reportText, summarize, targetTable } from "./e2e-report.ts";
import type { ReportInput, Summary } from "./e2e-report.ts";
import { createBenchEnv, openCase, phaseMedians, pricedRuns, resumeSample, runCostWorkloads } from "./e2e-run.ts";
import { runGit, runMs, runOnce, wrapperOverhead } from "./e2e-run.ts";
import type { Case, ResumeSample, RunRecord, WrapperOverhead } from "./e2e-run.ts";
import { p50, round, sum } from "./e2e-stats.ts";

async function main(): Promise<void> {
  const config = readConfig();
  const { runs: RUNS, sizes: SIZES, modes: MODES, profileRuns: PROFILE_RUNS } = config;
  const started = performance.now();
  const env = createBenchEnv();
  const smallest = Math.min(...SIZES);
  const cases: Case[] = [];
  const profiles: Record<string, ProfileSummary> = {};
  const resumeProfiles: Record<string, ProfileSummary> = {};
  const resumes = new Map<string, ResumeSample[]>();
  const detailPhases: Record<string, Record<string, number>> = {};
  const costCases: CostCase[] = [];
  const loadAtStart = loadavg();
  let loadAfterRuns = loadAtStart;
  /** The bench process's size: a spawn (fork + exec) costs more in a larger process. */
  let rssAfterRuns = 0;
  let overhead: WrapperOverhead = { directMs: NaN, wrappedMs: NaN };
  let overheadAfterRuns: WrapperOverhead = { directMs: NaN, wrappedMs: NaN };
  const gitVersion = (await runGit(["--version"], env.work, env.baseEnv, env.realGit)).trim();
  try {
    await installPhaseWrappers();
    overhead = await wrapperOverhead(env);
    // Warm-up sessions (discarded) so that the measured sessions' first runs are not the JIT's.
    const warm: Case[] = [];
    for (const mode of MODES) warm.push(await openCase(env, { mode, sizeKiB: smallest, label: "-warmup" }));
    for (let run = 1; run <= config.warmupRuns; run++) for (const c of warm) await runOnce(c, run, { account: false });
    for (const c of warm) await c.bench.session.dispose?.();
    for (const sizeKiB of SIZES)
      for (const mode of MODES) cases.push(await openCase(env, { mode, sizeKiB, label: "" }));
    for (let run = 1; run <= RUNS; run++) {
      for (let j = 0; j < cases.length; j++) {
        const c = cases[(j + run) % cases.length]!;
        c.runs.push(await runOnce(c, run, { account: true }));
      }
      if (run % 20 === 0)
        process.stderr.write(`  … ${run}/${RUNS} runs (${round((performance.now() - started) / 1000, 0)} s)\n`);
    }
    for (const c of cases) {
      c.storeBytes = sum([...storeFiles(c.dirs.storeRoot).values()].map((b) => b.length));
      c.gitDirBytes = dirBytes(join(c.dirs.storeRoot, ".git"));
    }
    for (let sample = 0; sample < config.resumeSamples; sample++)
      for (const c of cases) resumes.set(c.id, [...(resumes.get(c.id) ?? []), await resumeSample(env, c, sample)]);
    if (PROFILE_RUNS > 0 && config.resumeSamples > 0) {
      // One more resume per case, CPU-profiled from opening the session to its first context.
      mkdirSync(config.profileDir, { recursive: true });
      for (const c of cases.filter((x) => x.sizeKiB === smallest)) {
        const file = join(config.profileDir, `resume-${c.id}.cpuprofile`);
        await resumeSample(env, c, config.resumeSamples, file);
        resumeProfiles[c.id] = summarizeProfile(JSON.parse(readFileSync(file, "utf8")) as CpuProfile, 1, file);
      }
    }
    loadAfterRuns = loadavg();
    rssAfterRuns = process.memoryUsage().rss;
    overheadAfterRuns = await wrapperOverhead(env);
    if (PROFILE_RUNS > 0) {
      mkdirSync(config.profileDir, { recursive: true });
      for (const c of cases.filter((x) => x.sizeKiB === smallest)) {
        // First the detail pass (every file system call timed), then the CPU profile (without it).
        let run = RUNS;
        const records: RunRecord[] = [];
        await setDetail(true);
        for (let i = 0; i < PROFILE_RUNS; i++) records.push(await runOnce(c, ++run, { account: false }));
        await setDetail(false);
        detailPhases[c.id] = { run: round(p50(runMs(records)), 3), ...phaseMedians(records) };
        const file = join(config.profileDir, `${c.id}.cpuprofile`);
        const profile = await profiled(file, async () => {
          for (let i = 0; i < PROFILE_RUNS; i++) await runOnce(c, ++run, { account: false });
        });
        profiles[c.id] = summarizeProfile(profile, PROFILE_RUNS, file);
      }
    }
    if (config.costRuns > 0) costCases.push(...(await runCostWorkloads(env, config)));
  } finally {
    for (const c of cases) await c.bench.session.dispose?.();
    rmSync(env.work, { recursive: true, force: true });
  }

  const summaries = new Map<string, Summary>();
  for (const c of cases) summaries.set(c.id, summarize(c, resumes.get(c.id) ?? [], config));
  const phases: Record<string, Record<string, number>> = {};
  for (const c of cases) phases[c.id] = { run: round(p50(runMs(c.runs)), 3), ...phaseMedians(c.runs) };
  const report: ReportInput = {
    config,
    pi: VERSION,
    cores: cpus().length,
    gitVersion,
    loadAtStart,
    loadAfterRuns,
    rssAfterRuns,
    overhead,
    overheadAfterRuns,
    cases: cases.map((c) => ({ id: c.id, mode: c.mode, sizeKiB: c.sizeKiB })),
    summaries,
    ...computeTargets(summaries, config),
    phases,
    detailPhases,
    profiles,
    resumeProfiles,
    missing,
  };
  // The timed workload's requests priced too: native against file-only (or Git: the same requests).
  const benchCosts: CostCase[] = [];
  for (const sizeKiB of SIZES) {
    const native = cases.find((c) => c.mode === "native" && c.sizeKiB === sizeKiB);
    const stateFlow = cases.find((c) => c.mode !== "native" && c.sizeKiB === sizeKiB);
    if (native && stateFlow)
      benchCosts.push({ workload: "bench", sizeKiB, native: pricedRuns(native), stateFlow: pricedRuns(stateFlow) });
  }
  const costs = allCostFigures([...benchCosts, ...costCases]);
  const costTargetList = costTargets(costs);
  process.stdout.write(reportText(report));
  process.stdout.write(costText(costs) + targetTable(costTargetList));
  const totalSeconds = round((performance.now() - started) / 1000, 1);
  const cost = {
    figures: costs,
    targets: costTargetList.map((t) => [t.target, t.value, t.limit, t.pass ? "PASS" : "FAIL"]),
  };
  console.log(`BENCH ${JSON.stringify(benchResult(report, process.version, totalSeconds, { cost }))}`);
}

await main();
