// What `npm run bench` (bench/e2e.ts) reports: a summary per case (pure: the case's run records
// and resume samples in, figures out), the targets as pure functions of the summaries, the tables
// and the final `BENCH {json}` line.

import type { BenchConfig, Mode } from "./e2e-config.ts";
import { gitCommand } from "./e2e-fixture.ts";
import type { ProfileSummary } from "./e2e-profile.ts";
import type { ResumeSample, RunRecord, WrapperOverhead } from "./e2e-run.ts";
import { mean, p50, p95, round, sum } from "./e2e-stats.ts";
import { cost } from "./e2e-tokens.ts";

/** What a summary reads of a case. */
export interface CaseRecords {
  readonly mode: Mode;
  readonly runs: readonly RunRecord[];
  readonly stateBytes?: number;
  readonly storeBytes?: number;
  readonly gitDirBytes?: number;
  /** Present for the Git cases that ran the bare-commit baseline. */
  readonly bare?: unknown;
}

type Billing = "requests" | "frozenRequests";

function tokenTotals(runs: readonly RunRecord[], n: number, of: Billing = "requests") {
  const requests = runs.slice(0, n).flatMap((r) => r[of]);
  return {
    uncached: sum(requests.map((r) => cost(r).uncached)),
    cached: round(sum(requests.map((r) => cost(r).cached)), 1),
  };
}

/** Fraction of one run's input tokens that were prefix-cache hits. */
const runHit = (r: RunRecord, of: Billing = "requests") =>
  sum(r[of].map((q) => q.cached)) / Math.max(1, sum(r[of].map((q) => q.tokens)));

const runMs = (records: readonly RunRecord[]) => records.map((r) => r.ms);

const STATE_FLOW = "State Flow (all hooks and tools)";
const PI = "Pi itself (run minus State Flow)";

export function summarize(c: CaseRecords, resume: readonly ResumeSample[], config: BenchConfig) {
  const { first: FIRST, window: WINDOW, runs: RUNS } = config;
  const all = c.runs;
  const atRuns = (n: number) => all.slice(0, n);
  const phaseP50 = (records: readonly RunRecord[], phase: string) => p50(records.map((r) => r.phases[phase] ?? 0));
  const phaseGrowth = (phase: string) =>
    round(phaseP50(all.slice(-WINDOW), phase) / phaseP50(all.slice(0, WINDOW), phase));
  const perRun = all.map((r) => r.git.length);
  const reads = sum(all.map((r) => r.storeReads));
  const cohorts = sum(all.map((r) => r.cohorts));
  const commands: Record<string, number> = {};
  for (const r of all) for (const line of r.git) commands[gitCommand(line)] = (commands[gitCommand(line)] ?? 0) + 1;
  const requestBytes = (r: RunRecord | undefined) => (r ? round(mean(r.requests.map((q) => q.bytes)), 0) : NaN);
  const tokens: Record<string, { uncached: number; cached: number }> = {};
  for (const n of config.tokenRuns) tokens[`runs${n}`] = tokenTotals(all, n);
  return {
    stateBytes: c.stateBytes,
    runMs: {
      [`runs${FIRST}`]: { p50: round(p50(runMs(atRuns(FIRST)))), p95: round(p95(runMs(atRuns(FIRST)))) },
      [`runs${RUNS}`]: { p50: round(p50(runMs(all))), p95: round(p95(runMs(all))) },
    } as Record<string, { p50: number; p95: number }>,
    growth: round(p50(runMs(all.slice(-WINDOW))) / p50(runMs(all.slice(0, WINDOW)))),
    // The same ratio for State Flow's hooks and tools alone and for the rest of the run (Pi, which
    // keeps the whole transcript even where State Flow replaces what reaches the model).
    growthStateFlow: phaseGrowth(STATE_FLOW),
    growthPi: phaseGrowth(PI),
    msStateFlow: {
      first: round(phaseP50(all.slice(0, WINDOW), STATE_FLOW)),
      last: round(phaseP50(all.slice(-WINDOW), STATE_FLOW)),
    },
    msPi: { first: round(phaseP50(all.slice(0, WINDOW), PI)), last: round(phaseP50(all.slice(-WINDOW), PI)) },
    gitPerRun: { mean: round(mean(perRun)), max: Math.max(...perRun) },
    cohortsPerRun: round(cohorts / all.length),
    gitPerCohort: cohorts > 0 ? round(sum(perRun) / cohorts) : null,
    // Per store read; a run that reads the store no more (its own basis suffices) has none to count.
    gitPerStoreRead: reads > 0 ? round(sum(all.map((r) => r.readGit)) / reads) : 0,
    gitInStoreReadsPerRun: round(mean(all.map((r) => r.readGit))),
    storeReadsPerRun: round(mean(all.map((r) => r.storeReads))),
    gitCommandsPerRun: Object.fromEntries(Object.entries(commands).map(([k, v]) => [k, round(v / all.length)])),
    ...(c.bare
      ? {
          bareCommitMs: {
            p50: round(p50(all.map((r) => r.bareMs!))),
            p95: round(p95(all.map((r) => r.bareMs!))),
          },
          bareGitPerRun: round(mean(all.map((r) => r.bareGit!))),
          // The bare commit does not grow with the session: its last/first ratio shows how the
          // machine's load drifted over the rounds, which the growth figures include.
          bareGrowth: round(
            p50(all.slice(-WINDOW).map((r) => r.bareMs!)) / p50(all.slice(0, WINDOW).map((r) => r.bareMs!)),
          ),
        }
      : {}),
    contextBytes: {
      run1: requestBytes(all[0]),
      [`run${FIRST}`]: requestBytes(all[FIRST - 1]),
      [`run${RUNS}`]: requestBytes(all[RUNS - 1]),
    } as Record<string, number>,
    tokens: {
      ...tokens,
      withinRunCacheHit: {
        p50: round(p50(all.map((r) => runHit(r))), 3),
        [`runs${FIRST}`]: round(p50(atRuns(FIRST).map((r) => runHit(r))), 3),
      },
      /** p50 over runs of each inference's prefix-cache hit fraction (1: read, 2: state write, 3: answer). */
      hitByInference: [0, 1, 2].map((i) =>
        round(p50(all.map((r) => (r.requests[i] ? r.requests[i]!.cached / r.requests[i]!.tokens : 0))), 3),
      ),
      // The bound this layout leaves: the patch re-bills state[0] from its first changed character on
      // and the whole trajectory behind it. Billed as if it did not (see frozenContext), State Flow
      // would pay only for new content and each state change once.
      ...(c.mode === "native"
        ? {}
        : {
            ifContextFrozen: {
              ...Object.fromEntries(
                config.tokenRuns.map((n) => [`runs${n}`, { cached: tokenTotals(all, n, "frozenRequests").cached }]),
              ),
              withinRunCacheHit: round(p50(all.map((r) => runHit(r, "frozenRequests"))), 3),
            },
          }),
      inputTokensPerRun: {
        run1: sum(all[0]!.requests.map((q) => q.tokens)),
        last: sum(all.at(-1)!.requests.map((q) => q.tokens)),
      },
      firstRequestAnatomy: { run1: all[0]!.anatomy, last: all.at(-1)!.anatomy },
    },
    resume: {
      samples: resume.length,
      firstContextMs: round(p50(resume.map((r) => r.firstContextMs))),
      openMs: round(p50(resume.map((r) => r.openMs))),
      createMs: round(p50(resume.map((r) => r.createMs))),
      bindMs: round(p50(resume.map((r) => r.bindMs))),
      processWallMs: round(p50(resume.map((r) => r.processWallMs))),
      gitProcesses: Math.max(0, ...resume.map((r) => r.git.length)),
      gitCommands: resume[0]?.git.map(gitCommand) ?? [],
      contextBytes: resume[0]?.contextBytes ?? null,
      restoredStep: resume[0]?.restoredStep ?? null,
      warnings: [...new Set(resume.flatMap((r) => r.errors))],
    },
    storeBytes: c.storeBytes ?? 0,
    gitDirBytes: c.gitDirBytes ?? 0,
  };
}

export type Summary = ReturnType<typeof summarize>;

/** A summary's token totals over its first n runs (n one of the config's tokenRuns). */
export const tokensAt = (s: Summary, n: number) =>
  (s.tokens as unknown as Record<string, { uncached: number; cached: number }>)[`runs${n}`]!;

export interface Target {
  target: string;
  value: number;
  limit: string;
  pass: boolean;
}

/** A target: `value` against `limit`, ≤ (or ≥ with le = false), rounded to 3 decimals. */
export function check(target: string, value: number, limit: number, le = true): Target {
  return {
    target,
    value: round(value, 3),
    limit: `${le ? "≤" : "≥"} ${limit}`,
    pass: le ? value <= limit : value >= limit,
  };
}

/**
 * The targets of the timed workload, from the summaries keyed `<mode>-<size>KiB`, and the token
 * figures again billed as if an accepted patch left the runtime context as it was (`bounds`).
 */
export function computeTargets(summaries: ReadonlyMap<string, Summary>, config: BenchConfig) {
  const { runs: RUNS, window: WINDOW } = config;
  const targets: Target[] = [];
  const bounds: [string, number][] = [];
  const get = (mode: Mode, size: number) => (config.modes.includes(mode) ? summaries.get(`${mode}-${size}KiB`) : null);
  const p50At = (s: Summary, n: number) => s.runMs[`runs${n}`]!.p50;
  for (const size of config.sizes) {
    const native = get("native", size);
    if (!native) break;
    const file = get("file", size);
    const git = get("git", size);
    const s = `${size} KiB`;
    if (file)
      targets.push(
        check(`${s}: file-only run p50 / native at ${RUNS} runs`, p50At(file, RUNS) / p50At(native, RUNS), 1.5),
      );
    if (git) {
      targets.push(
        check(
          `${s}: (Git run p50 − native) / bare commit p50 at ${RUNS} runs`,
          (p50At(git, RUNS) - p50At(native, RUNS)) / git.bareCommitMs!.p50,
          1.3,
        ),
      );
      targets.push(check(`${s}: git processes per accepted cohort`, git.gitPerCohort ?? NaN, 1));
      targets.push(check(`${s}: git processes in store reads on the hot path, per run`, git.gitInStoreReadsPerRun, 0));
      if (config.resumeSamples > 0) targets.push(check(`${s}: Git resume git processes`, git.resume.gitProcesses, 2));
    }
    const stateFlow = [
      ["file-only", file],
      ["Git", git],
    ] as const;
    for (const [name, sf] of stateFlow) {
      if (!sf) continue;
      if (config.resumeSamples > 0)
        targets.push(
          check(
            `${s}: ${name} resume first context / native`,
            sf.resume.firstContextMs / native.resume.firstContextMs,
            3,
          ),
        );
      targets.push(check(`${s}: ${name} growth (last ${WINDOW} / first ${WINDOW} of ${RUNS})`, sf.growth, 1.2));
    }
    for (const [name, sf] of stateFlow) {
      if (!sf) continue;
      for (const [n, limit] of [
        [Math.min(20, RUNS), 0.6],
        [Math.min(100, RUNS), 0.2],
      ] as const) {
        const ratio = tokensAt(sf, n).cached / tokensAt(native, n).cached;
        targets.push(check(`${s}: ${name} token cost with prefix cache / native over ${n} runs`, ratio, limit));
      }
      const hit = sf.tokens.withinRunCacheHit.p50;
      targets.push(check(`${s}: ${name} within-run cache hit (p50 over runs)`, hit, 0.9, false));
      const frozen = sf.tokens.ifContextFrozen as Record<string, { cached: number }> & { withinRunCacheHit: number };
      for (const n of config.tokenRuns)
        bounds.push([
          `${s}: ${name} token cost with prefix cache / native over ${n} runs`,
          frozen[`runs${n}`]!.cached / tokensAt(native, n).cached,
        ]);
      bounds.push([`${s}: ${name} within-run cache hit (p50 over runs)`, frozen.withinRunCacheHit]);
    }
  }
  return { targets, bounds };
}

/** Rows as a table: each column padded to its widest cell, two spaces apart, a blank line after. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ")).join("\n") + "\n\n";
}

export const targetTable = (targets: readonly Target[]) =>
  table([
    ["target", "value", "limit", "result"],
    ...targets.map((t) => [t.target, `${t.value}`, t.limit, t.pass ? "PASS" : "FAIL"]),
  ]);

/** A phase table: the wall-time rows (sorted), then the call counts on one line. */
export function phaseText(title: string, rows: Record<string, number>, limit: number): string {
  // A "[State Flow]" split equal to its total says nothing more.
  const ms = Object.entries(rows).filter(
    ([k, v]) => !k.endsWith("(calls)") && !(k.endsWith(" [State Flow]") && rows[k.slice(0, -13)] === v),
  );
  let out = `${title}\n${table(ms.slice(0, limit).map(([k, v]) => [`  ${k}`, `${v}`]))}`;
  const calls = Object.entries(rows).filter(([k]) => k.endsWith("(calls)") && !k.includes("["));
  if (calls.length > 0)
    out += `  calls per run: ${calls.map(([k, v]) => `${k.replace(" (calls)", "")} ${v}`).join(", ")}\n\n`;
  return out;
}

function profileText(title: string, p: ProfileSummary, unit: string): string {
  const owners = Object.entries(p.byOwner)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  return (
    `${title}\n  by owner${unit === "ms" ? " (ms)" : ""}: ${owners}\n` +
    table([["  self", unit, "%"], ...p.self.map((f) => [`  ${f.fn}`, `${f.msPerRun}`, `${f.percent}`])]) +
    table([
      ["  State Flow inclusive", unit, "%"],
      ...p.inclusive.map((f) => [`  ${f.fn}`, `${f.msPerRun}`, `${f.percent}`]),
    ])
  );
}

/** Everything the report prints and the JSON line carries. */
export interface ReportInput {
  readonly config: BenchConfig;
  readonly pi: string;
  readonly cores: number;
  readonly gitVersion: string;
  readonly loadAtStart: readonly number[];
  readonly loadAfterRuns: readonly number[];
  readonly rssAfterRuns: number;
  readonly overhead: WrapperOverhead;
  readonly overheadAfterRuns: WrapperOverhead;
  /** The timed cases in their order: id, mode, size. */
  readonly cases: readonly { readonly id: string; readonly mode: Mode; readonly sizeKiB: number }[];
  readonly summaries: ReadonlyMap<string, Summary>;
  readonly targets: readonly Target[];
  readonly bounds: readonly [string, number][];
  readonly phases: Record<string, Record<string, number>>;
  readonly detailPhases: Record<string, Record<string, number>>;
  readonly profiles: Record<string, ProfileSummary>;
  readonly resumeProfiles: Record<string, ProfileSummary>;
  readonly missing: readonly string[];
}

export function reportText(r: ReportInput): string {
  const { config, summaries } = r;
  const { runs: RUNS, first: FIRST } = config;
  const at = (id: string) => summaries.get(id)!;
  let out =
    `State Flow end to end — Pi ${r.pi}, faux model, ${r.cores} cores, ${r.gitVersion}, ${RUNS} runs/case, ` +
    `${config.sizes.map((s) => `${s} KiB`).join(" + ")} state, all cases interleaved in one process; load average ` +
    `${r.loadAtStart.map((x) => round(x)).join(" ")} at start, ` +
    `${r.loadAfterRuns.map((x) => round(x)).join(" ")} after the runs\n\n`;
  out += table([
    [
      "case",
      "state B",
      `p50@${FIRST}`,
      `p95@${FIRST}`,
      `p50@${RUNS}`,
      `p95@${RUNS}`,
      "growth",
      "git/run",
      "git/cohort",
      "git/read",
      "bare commit p50",
      "bare growth",
      "ctx B run1",
      `ctx B run${RUNS}`,
    ],
    ...r.cases.map((c) => {
      const s = at(c.id);
      return [
        c.id,
        `${s.stateBytes}`,
        `${s.runMs[`runs${FIRST}`]!.p50}`,
        `${s.runMs[`runs${FIRST}`]!.p95}`,
        `${s.runMs[`runs${RUNS}`]!.p50}`,
        `${s.runMs[`runs${RUNS}`]!.p95}`,
        `${s.growth}`,
        `${s.gitPerRun.mean}`,
        `${s.gitPerCohort ?? "-"}`,
        `${s.gitPerStoreRead}`,
        s.bareCommitMs ? `${s.bareCommitMs.p50}` : "-",
        s.bareGrowth === undefined ? "-" : `${s.bareGrowth}`,
        `${s.contextBytes.run1}`,
        `${s.contextBytes[`run${RUNS}`]}`,
      ];
    }),
  ]);
  out += table([
    [
      "case",
      ...config.tokenRuns.flatMap((n) => [`tokens@${n} no cache`, `tokens@${n} prefix cache`]),
      "within-run hit p50",
      "hit by inference",
      "resume first ctx ms",
      "resume bind ms",
      "resume git",
      "resume process ms",
    ],
    ...r.cases.map((c) => {
      const s = at(c.id);
      const t = s.tokens;
      return [
        c.id,
        ...config.tokenRuns.flatMap((n) => [`${tokensAt(s, n).uncached}`, `${tokensAt(s, n).cached}`]),
        `${t.withinRunCacheHit.p50}`,
        t.hitByInference.join(" / "),
        `${s.resume.firstContextMs}`,
        `${s.resume.bindMs}`,
        `${s.resume.gitProcesses}`,
        `${s.resume.processWallMs}`,
      ];
    }),
  ]);
  for (const c of r.cases) {
    const s = at(c.id);
    out +=
      `${c.id} growth split: Pi ${s.msPi.first} → ${s.msPi.last} ms (${s.growthPi}×)` +
      (c.mode === "native"
        ? ""
        : `, State Flow ${s.msStateFlow.first} → ${s.msStateFlow.last} ms (${s.growthStateFlow}×)`) +
      "\n";
  }
  for (const c of r.cases) {
    const a = at(c.id).tokens.firstRequestAnatomy.last;
    if (a) out += `${c.id} run ${RUNS}, first request tokens: ${JSON.stringify(a)}\n`;
  }
  const gitCases = r.cases.filter((c) => c.mode === "git");
  const commands = gitCases.map((c) => `${c.id} ${JSON.stringify(at(c.id).gitCommandsPerRun)}`);
  out += `git commands per run: ${commands.join("; ")}\n`;
  const { directMs, wrappedMs } = r.overhead;
  out +=
    `git wrapper: git --version ${round(directMs)} ms direct, ${round(wrappedMs)} ms through it; ` +
    `after the runs (bench process RSS ${round(r.rssAfterRuns / 2 ** 20, 0)} MiB) ` +
    `${round(r.overheadAfterRuns.directMs)} ms direct, ${round(r.overheadAfterRuns.wrappedMs)} ms through it\n\n`;
  out += targetTable(r.targets);
  if (r.bounds.length > 0) {
    out += "The token figures if an accepted patch had left the runtime context as it was for the rest of its run:\n";
    out += table([["figure", "value"], ...r.bounds.map(([figure, value]) => [figure, `${round(value, 3)}`])]);
  }
  const smallest = Math.min(...config.sizes);
  for (const c of r.cases.filter((x) => x.mode !== "native" || x.sizeKiB === smallest))
    out += phaseText(`phases of a ${c.id} run (p50 ms per run over ${RUNS} runs):`, r.phases[c.id]!, 32);
  for (const [id, rows] of Object.entries(r.detailPhases))
    out += phaseText(`detail pass ${id} (every fs call timed; p50 per run over ${config.profileRuns} runs):`, rows, 45);
  for (const [id, p] of Object.entries(r.profiles))
    out += profileText(
      `CPU profile ${id} (${p.runs} runs, ${p.totalMs} ms sampled; ms per run) — ${p.file}`,
      p,
      "ms/run",
    );
  for (const [id, p] of Object.entries(r.resumeProfiles))
    out += profileText(
      `CPU profile of a resume process ${id} (open to first context, ${p.totalMs} ms sampled) — ${p.file}`,
      p,
      "ms",
    );
  if (r.missing.length > 0) out += `(not timed — method not found: ${r.missing.join(", ")})\n`;
  return out;
}

/** The 15 largest wall-time rows of each phase table, Pi/State Flow splits left out (printed above in full). */
const trimmed = (t: Record<string, Record<string, number>>) =>
  Object.fromEntries(
    Object.entries(t).map(([id, rows]) => [
      id,
      Object.fromEntries(
        Object.entries(rows)
          .filter(([k]) => !k.endsWith("(calls)") && !k.includes("["))
          .slice(0, 15),
      ),
    ]),
  );

/** Owners above 0.1 ms per run and the top functions, rounded for the one-line summary. */
const compactProfile = (p: ProfileSummary, top: number) => ({
  runs: p.runs,
  byOwner: Object.fromEntries(
    Object.entries(p.byOwner)
      .filter(([, v]) => v >= 0.1)
      .map(([k, v]) => [k, round(v)]),
  ),
  self: p.self.slice(0, top).map((f) => [f.fn, round(f.msPerRun)]),
  inclusive: p.inclusive.slice(0, top).map((f) => [f.fn, round(f.msPerRun)]),
});

/** The object of the `BENCH {json}` line; `extra` (the cost model's figures) goes before the timing. */
export function benchResult(r: ReportInput, node: string, totalSeconds: number, extra: Record<string, unknown> = {}) {
  return {
    pi: r.pi,
    node,
    git: r.gitVersion,
    cores: r.cores,
    runs: r.config.runs,
    sizesKiB: r.config.sizes,
    resumeSamples: r.config.resumeSamples,
    loadavg: { start: r.loadAtStart.map((x) => round(x)), afterRuns: r.loadAfterRuns.map((x) => round(x)) },
    rssMiBAfterRuns: round(r.rssAfterRuns / 2 ** 20, 0),
    gitWrapperMs: {
      direct: round(r.overhead.directMs, 3),
      wrapped: round(r.overhead.wrappedMs, 3),
      directAfterRuns: round(r.overheadAfterRuns.directMs, 3),
      wrappedAfterRuns: round(r.overheadAfterRuns.wrappedMs, 3),
    },
    cases: Object.fromEntries(r.summaries),
    targets: r.targets.map((t) => [t.target, t.value, t.limit, t.pass ? "PASS" : "FAIL"]),
    tokensIfContextFrozen: r.bounds.map(([figure, value]) => [figure, round(value, 3)]),
    phases: trimmed(r.phases),
    profile: Object.fromEntries(Object.entries(r.profiles).map(([id, p]) => [id, compactProfile(p, 6)])),
    resumeProfile: Object.fromEntries(Object.entries(r.resumeProfiles).map(([id, p]) => [id, compactProfile(p, 5)])),
    ...extra,
    totalSeconds,
  };
}
