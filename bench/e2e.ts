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
// Environment: BENCH_RUNS (200), BENCH_SIZES (KiB, "8,128"), BENCH_MODES ("native,file,git"),
// BENCH_RESUME_SAMPLES (3), BENCH_PROFILE_RUNS (40; 0 = no profile), BENCH_WARMUP_RUNS (10),
// BENCH_PROFILE_DIR (the .cpuprofile files; default a folder in the OS temp dir, kept). Prints
// tables and ends with one line `BENCH {json}`. Reports targets as ratios with pass/fail; never
// asserts. docs/performance.md has the figures of one run and how to read them.

import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { basename, delimiter, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { Context } from "@earendil-works/pi-ai";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { scriptedSteps, type ScriptedStep, type ToolArgs } from "../adapters/pi/offline-session.ts";
import { providerRequest } from "../adapters/pi/provider-request.ts";
import { findGitExecutable } from "../storage/git/git-runner.ts";
import { PrefixCache, cost, type BilledRequest, type CapturedRequest } from "./e2e-tokens.ts";
import { installPhaseWrappers, missing, phaseTable, setDetail, takeIntervals, type Interval } from "./e2e-phases.ts";
import { profiled, summarizeProfile, type CpuProfile, type ProfileSummary } from "./e2e-profile.ts";
import {
  gitWrapper,
  isolatedBenchGitEnv,
  openBenchSession,
  type BenchSession,
  type CaseDirs,
  type Mode,
} from "./e2e-session.ts";

const intEnv = (name: string, fallback: number) => {
  const value = process.env[name];
  return value === undefined || value === "" ? fallback : Math.max(0, Number.parseInt(value, 10));
};
const RUNS = Math.max(2, intEnv("BENCH_RUNS", 200));
const SIZES = (process.env.BENCH_SIZES ?? "8,128").split(",").map((s) => Number(s.trim()));
const RESUME_SAMPLES = intEnv("BENCH_RESUME_SAMPLES", 3);
const PROFILE_RUNS = intEnv("BENCH_PROFILE_RUNS", 40);
const WARMUP_RUNS = intEnv("BENCH_WARMUP_RUNS", 10);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR ?? join(tmpdir(), "sf-bench-e2e-profiles");
const FIRST = Math.min(20, RUNS);
const WINDOW = Math.min(20, Math.floor(RUNS / 2));
const TOKEN_RUNS = [...new Set([20, 100].map((n) => Math.min(n, RUNS)))];
const READ_BYTES = 4096;
const INPUT_FILES = 10;
/** One note or fact: `"n000":"<240 chars>",` is 250 bytes of state JSON. */
const NOTE_CHARS = 240;
const ENTRY_BYTES = 250;
const MODES = (process.env.BENCH_MODES ?? "native,file,git").split(",").map((m) => m.trim() as Mode);
const CHILD = fileURLToPath(new URL("./e2e-resume-child.ts", import.meta.url));

const realGit = findGitExecutable(process.env);
if (!realGit) throw new Error("npm run bench needs git on PATH");
const started = performance.now();
const work = mkdtempSync(join(tmpdir(), "sf-bench-e2e-"));
const agentDir = join(work, "agent");
mkdirSync(agentDir, { recursive: true });
// One agent dir for every session: Pi's getAgentDir() follows this variable, and each case names
// its own store root, so no case depends on which one set the variable last.
process.env.PI_CODING_AGENT_DIR = agentDir;
process.env.PI_OFFLINE = "1";
// An interrupted bench (Ctrl-C) still removes its temporary directory.
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.once(signal, () => {
    rmSync(work, { recursive: true, force: true });
    process.exit(130);
  });
const baseEnv = isolatedBenchGitEnv(work);
const noGitPath = join(work, "no-git-bin");
mkdirSync(noGitPath);

// ---- statistics ------------------------------------------------------------------------------

const round = (x: number, d = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);
function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
const p50 = (xs: readonly number[]) => quantile(xs, 0.5);
const p95 = (xs: readonly number[]) => quantile(xs, 0.95);
const mean = (xs: readonly number[]) => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

// ---- workload --------------------------------------------------------------------------------

const noteKey = (prefix: string, k: number) => `${prefix}${String(k).padStart(3, "0")}`;
function noteText(kind: string, k: number, run: number): string {
  const head = `${kind} ${k} as of run ${run}: `;
  const filler = "the verified observation, its source and the exact continuation of the work; ";
  return (head + filler.repeat(Math.ceil(NOTE_CHARS / filler.length))).slice(0, NOTE_CHARS);
}
const stateLine = (key: string, text: string) => `- ${key}: ${text}`;

interface Seed {
  facts: Record<string, string>;
  notes: Record<string, string>;
  count: number;
}

/** Half the state in the cwd contract (stable), half in session notes (one replaced per run). */
function seedState(sizeKiB: number): Seed {
  const count = Math.max(1, Math.floor((sizeKiB * 1024) / 2 / ENTRY_BYTES));
  const facts: Record<string, string> = {};
  const notes: Record<string, string> = {};
  for (let k = 0; k < count; k++) {
    facts[noteKey("f", k)] = noteText("fact", k, 0);
    notes[noteKey("n", k)] = noteText("note", k, 0);
  }
  return { facts, notes, count };
}

function writeInputs(cwd: string): void {
  mkdirSync(join(cwd, "data"), { recursive: true });
  for (let j = 0; j < INPUT_FILES; j++) {
    const line = `input ${j}: a line of the file the model reads in this run, as a coding agent would. `;
    writeFileSync(
      join(cwd, "data", `input-${j}.txt`),
      line.repeat(Math.ceil(READ_BYTES / line.length)).slice(0, READ_BYTES),
    );
  }
}

// ---- git -------------------------------------------------------------------------------------

function runGit(args: string[], cwd: string, env: NodeJS.ProcessEnv, git = realGit!): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(git, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", fail);
    child.on("close", (code) => (code === 0 ? done(out) : fail(new Error(`git ${args.join(" ")}: ${err}`))));
  });
}

/** New lines of a git wrapper's counter file since the last call. */
class GitCounter {
  private offset = 0;
  private readonly file: string;
  constructor(file: string) {
    this.file = file;
  }
  take(): string[] {
    if (!existsSync(this.file)) return [];
    const bytes = readFileSync(this.file);
    const fresh = bytes.subarray(this.offset).toString("utf8");
    this.offset = bytes.length;
    return fresh.split("\n").filter((l) => l !== "");
  }
}

/** `add -A`, `cat-file --batch-check`, `rev-parse` …: a git command line without its long arguments. */
function gitCommand(line: string): string {
  const words = line.split(" ");
  let i = 0;
  while (words[i] === "-c") i += 2;
  const name = words[i] ?? "?";
  const flag = words[i + 1];
  return flag && flag.startsWith("-") && !flag.includes("=") ? `${name} ${flag}` : name;
}

/** Every file below `root` outside `.git`, with its bytes. */
function storeFiles(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  if (!existsSync(root)) return files;
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const rel = relative(root, path);
    if (!entry.isFile() || rel === ".git" || rel.startsWith(`.git/`)) continue;
    files.set(rel, readFileSync(path));
  }
  return files;
}

function dirBytes(root: string): number {
  if (!existsSync(root)) return 0;
  let total = 0;
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) total += readFileSync(join(entry.parentPath, entry.name)).length;
  return total;
}

// ---- cases -----------------------------------------------------------------------------------

interface RunRecord {
  run: number;
  ms: number;
  /** The git wrapper's lines for this run (one per process). */
  git: string[];
  cohorts: number;
  /** Git processes that ran inside a store read (GitBackend.loadCurrent / loadRevision). */
  readGit: number;
  storeReads: number;
  phases: Record<string, number>;
  requests: BilledRequest[];
  /**
   * State Flow: the same requests billed as if the runtime context had stayed what the run's first
   * request sent (an accepted patch changing nothing before the trajectory); see `whatIf`.
   */
  frozenRequests: BilledRequest[];
  /** Input tokens of the run's first request by part (tools, system prompt, first message, the rest). */
  anatomy?: { tools: number; system: number; firstMessage: number; rest: number };
  bareMs?: number;
  bareGit?: number;
}

interface Case {
  id: string;
  mode: Mode;
  sizeKiB: number;
  dirs: CaseDirs;
  env: NodeJS.ProcessEnv;
  bench: BenchSession;
  seed: Seed;
  /** Current note texts (native's edit replaces the exact old line). */
  notes: string[];
  counter: GitCounter;
  cache: PrefixCache;
  /** The prefix cache of the frozen-context billing (State Flow cases). */
  frozenCache: PrefixCache;
  runs: RunRecord[];
  bare?: { repo: string; env: NodeJS.ProcessEnv; git: string; counter: GitCounter };
  stateBytes?: number;
  /** Bytes of the store's files (outside .git) and of its .git directory after the measured runs. */
  storeBytes?: number;
  gitDirBytes?: number;
}

const { say, call } = scriptedSteps("bench");

async function prompt(bench: BenchSession, text: string): Promise<void> {
  await bench.session.prompt(text);
  await bench.session.waitForIdle();
  const errors = bench.notices.filter((n) => n.level === "error").splice(0);
  if (errors.length > 0) throw new Error(`"${text}": ${errors.map((e) => e.message).join("; ")}`);
}

async function openCase(mode: Mode, sizeKiB: number, label: string): Promise<Case> {
  const id = `${mode}-${sizeKiB}KiB${label}`;
  const root = join(work, id);
  const dirs: CaseDirs = {
    cwd: join(root, "project"),
    sessionDir: join(root, "sessions"),
    storeRoot: join(root, "store"),
    gitCounter: join(root, "git-processes.log"),
  };
  mkdirSync(dirs.cwd, { recursive: true });
  writeInputs(dirs.cwd);
  const wrapper = gitWrapper(join(root, "git-bin"), realGit!, dirs.gitCounter);
  const env = { ...baseEnv, PATH: mode === "git" ? `${wrapper}${delimiter}${baseEnv.PATH ?? ""}` : noGitPath };
  const bench = await openBenchSession({ mode, agentDir, dirs, env, timed: true });
  const seed = seedState(sizeKiB);
  const c: Case = {
    id,
    mode,
    sizeKiB,
    dirs,
    env,
    bench,
    seed,
    notes: Object.values(seed.notes),
    counter: new GitCounter(dirs.gitCounter),
    cache: new PrefixCache(),
    frozenCache: new PrefixCache(),
    runs: [],
  };
  if (mode === "native") {
    const lines = [
      "# State",
      ...Object.entries(seed.facts).map(([k, v]) => stateLine(k, v)),
      ...Object.entries(seed.notes).map(([k, v]) => stateLine(k, v)),
    ];
    writeFileSync(join(dirs.cwd, "state.md"), `${lines.join("\n")}\n`);
    c.stateBytes = readFileSync(join(dirs.cwd, "state.md")).length;
    return c;
  }
  await prompt(bench, "/state-flow-start");
  bench.faux.appendResponses([
    call("patch_state", {
      cwd: { contract: { facts: seed.facts } },
      session: { working: { notes: seed.notes, status: "seeded" } },
      final: true,
    } as ToolArgs),
    say("Seeded."),
  ]);
  await prompt(bench, "Seed the state.");
  c.stateBytes = Buffer.byteLength(JSON.stringify(bench.accessor!.read(0).state));
  if (mode === "git") {
    const repo = join(root, "bare");
    const bareCounter = join(root, "bare-git-processes.log");
    const git = join(gitWrapper(join(root, "bare-git-bin"), realGit!, bareCounter), "git");
    for (const [path, bytes] of storeFiles(dirs.storeRoot)) {
      mkdirSync(dirname(join(repo, path)), { recursive: true });
      writeFileSync(join(repo, path), bytes);
    }
    await runGit(["init", "-q"], repo, baseEnv);
    await runGit(["add", "-A"], repo, baseEnv);
    await runGit(["commit", "-q", "-m", "seed"], repo, baseEnv);
    c.bare = { repo, env: baseEnv, git, counter: new GitCounter(bareCounter) };
  }
  c.counter.take(); // setup processes are not a run's
  return c;
}

/** The bare baseline: the files this run changed, written into a scratch repository and committed. */
async function bareCommit(c: Case, before: Map<string, Buffer>, run: number): Promise<{ ms: number; git: number }> {
  const bare = c.bare!;
  const after = storeFiles(c.dirs.storeRoot);
  const changed = [...after].filter(([path, bytes]) => !before.get(path)?.equals(bytes));
  bare.counter.take();
  const t = performance.now();
  for (const [path, bytes] of changed) {
    mkdirSync(dirname(join(bare.repo, path)), { recursive: true });
    writeFileSync(join(bare.repo, path), bytes);
  }
  await runGit(["add", "-A"], bare.repo, bare.env, bare.git);
  await runGit(["commit", "-q", "-m", `run ${run}`], bare.repo, bare.env, bare.git);
  const ms = performance.now() - t;
  return { ms, git: bare.counter.take().length };
}

interface RunOptions {
  /** Bill the requests and run the bare baseline (off while profiling). */
  account: boolean;
}

/** One run: read → state write → answer, checked to have gone exactly as scripted. */
async function runOnce(c: Case, run: number, options: RunOptions): Promise<RunRecord> {
  const k = (run - 1) % c.seed.count;
  const key = noteKey("n", k);
  const text = noteText("note", k, run);
  const input = `data/input-${run % INPUT_FILES}.txt`;
  const answer = `Run ${run}: recorded ${key}.`;
  const write: ScriptedStep =
    c.mode === "native"
      ? call("edit", {
          path: "state.md",
          edits: [{ oldText: stateLine(key, c.notes[k]!), newText: stateLine(key, text) }],
        } as ToolArgs)
      : call("patch_state", { session: { working: { notes: { [key]: text }, status: `run ${run}` } }, final: true });
  const captured: CapturedRequest[] = [];
  let benchMs = 0;
  c.bench.faux.appendResponses(
    [call("read", { path: input }), write, say(answer)].map((step) => (context: Context) => {
      const t = performance.now();
      // Only the references are kept here; billing runs after the run, outside its timing.
      const request = providerRequest(context);
      captured.push({ systemPrompt: request.systemPrompt, tools: request.tools, messages: [...request.messages] });
      benchMs += performance.now() - t;
      return step();
    }),
  );
  const before = options.account && c.bare ? storeFiles(c.dirs.storeRoot) : null;
  takeIntervals();
  const t0 = performance.now();
  await c.bench.session.prompt(`Run ${run}: read ${input}, then record ${key}.`);
  await c.bench.session.waitForIdle();
  const ms = performance.now() - t0 - benchMs;
  const intervals = takeIntervals();
  // The run must have been exactly the scripted one, or its figures are not this workload's.
  const pending = c.bench.faux.getPendingResponseCount();
  if (pending > 0) throw new Error(`${c.id} run ${run}: ${pending} scripted step(s) unused`);
  const errors = c.bench.notices.filter((n) => n.level === "error" || n.level === "warning").splice(0);
  if (errors.length > 0) throw new Error(`${c.id} run ${run}: ${errors.map((e) => e.message).join("; ")}`);
  if (c.mode === "native") {
    if (!readFileSync(join(c.dirs.cwd, "state.md"), "utf8").includes(stateLine(key, text)))
      throw new Error(`${c.id} run ${run}: the edit did not land`);
  } else if (c.bench.accessor!.read(0, "session").state.response !== answer) {
    const results = c.bench.session.messages
      .filter((m) => m.role === "toolResult")
      .slice(-2)
      .map((m) => JSON.stringify((m as { content: unknown }).content).slice(0, 400));
    throw new Error(`${c.id} run ${run}: the answer was not accepted as session.response; ${results.join(" | ")}`);
  }
  c.notes[k] = text;
  const git = c.counter.take();
  const record: RunRecord = {
    run,
    ms,
    git,
    cohorts: intervals.filter((i) => i.name === "GitBackend.publish" || i.name === "FileBackend.publish").length,
    ...storeReads(intervals),
    phases: phaseTable(intervals, ms),
    requests: options.account ? captured.map((r) => c.cache.bill(r)) : [],
    frozenRequests:
      options.account && c.mode !== "native" ? frozenContext(captured).map((r) => c.frozenCache.bill(r)) : [],
  };
  if (options.account && captured[0]) {
    const [tools, system, first, ...rest] = c.cache.elements(captured[0]).map((e) => e.tokens);
    record.anatomy = { tools: tools!, system: system!, firstMessage: first ?? 0, rest: sum(rest) };
  }
  if (before) {
    const bare = await bareCommit(c, before, run);
    record.bareMs = bare.ms;
    record.bareGit = bare.git;
  }
  return record;
}

/**
 * A run's requests with the runtime context (each request's first message) of its first request:
 * what billing would be if the accepted patch left everything before the trajectory as it was.
 * The next run's first request then carries the new state, so its difference is billed once, there.
 */
function frozenContext(requests: readonly CapturedRequest[]): CapturedRequest[] {
  const context = requests[0]?.messages[0];
  if (!context) return [...requests];
  return requests.map((r) => ({ ...r, messages: [context, ...r.messages.slice(1)] }));
}

/** Store reads on the hot path and the git processes that ran inside them. */
function storeReads(intervals: readonly Interval[]): { readGit: number; storeReads: number } {
  const reads = intervals.filter((i) => /^(Git|File)Backend\.load(Current|Revision)$/.test(i.name));
  const inside = intervals.filter(
    (i) => i.name.startsWith("git:") && reads.some((r) => r.start <= i.start && i.end <= r.end),
  );
  return { readGit: inside.length, storeReads: reads.length };
}

const runMs = (records: readonly RunRecord[]) => records.map((r) => r.ms);

/** The p50 over runs of each phase's per-run wall time (ms) or call count. */
function phaseMedians(records: readonly RunRecord[]): Record<string, number> {
  const names = new Set(records.flatMap((r) => Object.keys(r.phases)));
  const out: [string, number][] = [];
  for (const name of names) out.push([name, round(p50(records.map((r) => r.phases[name] ?? 0)), 3)]);
  return Object.fromEntries(out.filter(([, v]) => v >= 0.01).sort((a, b) => b[1] - a[1]));
}

// ---- resume ----------------------------------------------------------------------------------

interface ResumeSample {
  firstContextMs: number;
  openMs: number;
  createMs: number;
  bindMs: number;
  importMs: number;
  processWallMs: number;
  processToFirstContextMs: number;
  git: string[];
  contextBytes: number;
  restoredStep: number | null;
  errors: string[];
}

/** A fresh OS process opens a copy of the case's session file and store and builds its first context. */
async function resumeSample(c: Case, sample: number, profileFile?: string): Promise<ResumeSample> {
  const dir = join(work, "resume", `${c.id}-${sample}`);
  const sessionFile = c.bench.session.sessionFile;
  if (!sessionFile) throw new Error(`${c.id}: no session file`);
  const dirs: CaseDirs = {
    cwd: c.dirs.cwd,
    sessionDir: join(dir, "sessions"),
    storeRoot: join(dir, "store"),
    gitCounter: join(dir, "git-processes.log"),
  };
  mkdirSync(dirs.sessionDir, { recursive: true });
  cpSync(sessionFile, join(dirs.sessionDir, basename(sessionFile)));
  if (existsSync(c.dirs.storeRoot)) cpSync(c.dirs.storeRoot, dirs.storeRoot, { recursive: true });
  const wrapper = gitWrapper(join(dir, "git-bin"), realGit!, dirs.gitCounter);
  const env = c.mode === "git" ? { ...c.env, PATH: `${wrapper}${delimiter}${baseEnv.PATH ?? ""}` } : c.env;
  const resultFile = join(dir, "result.json");
  const input = {
    mode: c.mode,
    agentDir,
    dirs,
    env,
    sessionFile: join(dirs.sessionDir, basename(sessionFile)),
    resultFile,
    ...(profileFile ? { profileFile } : {}),
  };
  const t = performance.now();
  const stderr = await new Promise<string>((done, fail) => {
    const child = spawn(process.execPath, ["--experimental-strip-types", CHILD, JSON.stringify(input)], {
      env: { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", fail);
    child.on("close", (code) => (code === 0 ? done(err) : fail(new Error(`resume child ${c.id}: ${err}`))));
  });
  const processWallMs = performance.now() - t;
  if (!existsSync(resultFile)) throw new Error(`resume child ${c.id} wrote no result: ${stderr}`);
  const result = JSON.parse(readFileSync(resultFile, "utf8")) as Omit<ResumeSample, "git" | "processWallMs">;
  return { ...result, processWallMs, git: new GitCounter(dirs.gitCounter).take() };
}

// ---- the run ---------------------------------------------------------------------------------

/** The wrapper's own cost per git process (a shell exec), so the figures can be read without it. */
async function wrapperOverhead(): Promise<{ directMs: number; wrappedMs: number }> {
  const counter = join(work, "overhead.log");
  const wrapped = join(gitWrapper(join(work, "overhead-bin"), realGit!, counter), "git");
  const direct: number[] = [];
  const via: number[] = [];
  for (let i = 0; i < 33; i++) {
    let t = performance.now();
    await runGit(["--version"], work, baseEnv);
    const d = performance.now() - t;
    t = performance.now();
    await runGit(["--version"], work, baseEnv, wrapped);
    if (i >= 3) (direct.push(d), via.push(performance.now() - t));
  }
  return { directMs: p50(direct), wrappedMs: p50(via) };
}

const cases: Case[] = [];
const warm: Case[] = [];
const profiles: Record<string, ProfileSummary> = {};
const resumeProfiles: Record<string, ProfileSummary> = {};
const resumes = new Map<string, ResumeSample[]>();
const detailPhases: Record<string, Record<string, number>> = {};
const loadAtStart = loadavg();
let loadAfterRuns = loadAtStart;
/** The bench process's size: a spawn (fork + exec) costs more in a larger process. */
let rssAfterRuns = 0;
let overheadAfterRuns: { directMs: number; wrappedMs: number } = { directMs: NaN, wrappedMs: NaN };
let overhead: { directMs: number; wrappedMs: number } = { directMs: NaN, wrappedMs: NaN };
const gitVersion = (await runGit(["--version"], work, baseEnv)).trim();
try {
  await installPhaseWrappers();
  overhead = await wrapperOverhead();
  // Warm-up sessions (discarded) so that the measured sessions' first runs are not the JIT's.
  for (const mode of MODES) warm.push(await openCase(mode, Math.min(...SIZES), "-warmup"));
  for (let run = 1; run <= WARMUP_RUNS; run++) for (const c of warm) await runOnce(c, run, { account: false });
  for (const c of warm) await c.bench.session.dispose?.();
  for (const size of SIZES) for (const mode of MODES) cases.push(await openCase(mode, size, ""));
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
  for (let sample = 0; sample < RESUME_SAMPLES; sample++) {
    for (const c of cases) resumes.set(c.id, [...(resumes.get(c.id) ?? []), await resumeSample(c, sample)]);
  }
  if (PROFILE_RUNS > 0 && RESUME_SAMPLES > 0) {
    // One more resume per case, CPU-profiled from opening the session to its first context.
    mkdirSync(PROFILE_DIR, { recursive: true });
    for (const c of cases.filter((x) => x.sizeKiB === Math.min(...SIZES))) {
      const file = join(PROFILE_DIR, `resume-${c.id}.cpuprofile`);
      await resumeSample(c, RESUME_SAMPLES, file);
      resumeProfiles[c.id] = summarizeProfile(JSON.parse(readFileSync(file, "utf8")) as CpuProfile, 1, file);
    }
  }
  loadAfterRuns = loadavg();
  rssAfterRuns = process.memoryUsage().rss;
  overheadAfterRuns = await wrapperOverhead();
  if (PROFILE_RUNS > 0) {
    mkdirSync(PROFILE_DIR, { recursive: true });
    for (const c of cases.filter((x) => x.sizeKiB === Math.min(...SIZES))) {
      // First the detail pass (every file system call timed), then the CPU profile (without it).
      let run = RUNS;
      const records: RunRecord[] = [];
      await setDetail(true);
      for (let i = 0; i < PROFILE_RUNS; i++) records.push(await runOnce(c, ++run, { account: false }));
      await setDetail(false);
      detailPhases[c.id] = { run: round(p50(runMs(records)), 3), ...phaseMedians(records) };
      const file = join(PROFILE_DIR, `${c.id}.cpuprofile`);
      const profile = await profiled(file, async () => {
        for (let i = 0; i < PROFILE_RUNS; i++) await runOnce(c, ++run, { account: false });
      });
      profiles[c.id] = summarizeProfile(profile, PROFILE_RUNS, file);
    }
  }
} finally {
  for (const c of cases) await c.bench.session.dispose?.();
  rmSync(work, { recursive: true, force: true });
}

// ---- report ----------------------------------------------------------------------------------

const atRuns = (c: Case, n: number) => c.runs.slice(0, n);

function tokenTotals(c: Case, n: number, of: "requests" | "frozenRequests" = "requests") {
  const requests = atRuns(c, n).flatMap((r) => r[of]);
  return {
    uncached: sum(requests.map((r) => cost(r).uncached)),
    cached: round(sum(requests.map((r) => cost(r).cached)), 1),
  };
}

/** Fraction of one run's input tokens that were prefix-cache hits. */
const runHit = (r: RunRecord, of: "requests" | "frozenRequests" = "requests") =>
  sum(r[of].map((q) => q.cached)) / Math.max(1, sum(r[of].map((q) => q.tokens)));

function phaseGrowth(all: readonly RunRecord[], phase: string): number {
  const of = (records: readonly RunRecord[]) => p50(records.map((r) => r.phases[phase] ?? 0));
  return round(of(all.slice(-WINDOW)) / of(all.slice(0, WINDOW)));
}

function summarize(c: Case) {
  const all = c.runs;
  const perRun = all.map((r) => r.git.length);
  const reads = sum(all.map((r) => r.storeReads));
  const cohorts = sum(all.map((r) => r.cohorts));
  const commands: Record<string, number> = {};
  for (const r of all) for (const line of r.git) commands[gitCommand(line)] = (commands[gitCommand(line)] ?? 0) + 1;
  const resume = resumes.get(c.id) ?? [];
  const requestBytes = (r: RunRecord | undefined) => (r ? round(mean(r.requests.map((q) => q.bytes)), 0) : NaN);
  const tokens: Record<string, unknown> = {};
  for (const n of TOKEN_RUNS) tokens[`runs${n}`] = tokenTotals(c, n);
  return {
    stateBytes: c.stateBytes,
    runMs: {
      [`runs${FIRST}`]: { p50: round(p50(runMs(atRuns(c, FIRST)))), p95: round(p95(runMs(atRuns(c, FIRST)))) },
      [`runs${RUNS}`]: { p50: round(p50(runMs(all))), p95: round(p95(runMs(all))) },
    },
    growth: round(p50(runMs(all.slice(-WINDOW))) / p50(runMs(all.slice(0, WINDOW)))),
    // The same ratio for State Flow's hooks and tools alone and for the rest of the run (Pi, which
    // keeps the whole transcript even where State Flow replaces what reaches the model).
    growthStateFlow: phaseGrowth(all, "State Flow (all hooks and tools)"),
    growthPi: phaseGrowth(all, "Pi itself (run minus State Flow)"),
    msStateFlow: {
      first: round(p50(all.slice(0, WINDOW).map((r) => r.phases["State Flow (all hooks and tools)"] ?? 0))),
      last: round(p50(all.slice(-WINDOW).map((r) => r.phases["State Flow (all hooks and tools)"] ?? 0))),
    },
    msPi: {
      first: round(p50(all.slice(0, WINDOW).map((r) => r.phases["Pi itself (run minus State Flow)"] ?? 0))),
      last: round(p50(all.slice(-WINDOW).map((r) => r.phases["Pi itself (run minus State Flow)"] ?? 0))),
    },
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
    },
    tokens: {
      ...tokens,
      withinRunCacheHit: {
        p50: round(p50(all.map((r) => runHit(r))), 3),
        [`runs${FIRST}`]: round(p50(atRuns(c, FIRST).map((r) => runHit(r))), 3),
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
                TOKEN_RUNS.map((n) => [`runs${n}`, { cached: tokenTotals(c, n, "frozenRequests").cached }]),
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

type Summary = ReturnType<typeof summarize>;
const summaries = new Map<string, Summary>();
for (const c of cases) summaries.set(c.id, summarize(c));
const get = (mode: Mode, size: number) => summaries.get(`${mode}-${size}KiB`)!;
const p50At = (s: Summary, n: number) => (s.runMs[`runs${n}`] as { p50: number }).p50;

interface Target {
  target: string;
  value: number;
  limit: string;
  pass: boolean;
}
const targets: Target[] = [];
/** The token figures again, billed as if an accepted patch left the runtime context as it was (frozenContext). */
const bounds: [string, number][] = [];
const check = (target: string, value: number, limit: number, le = true) =>
  targets.push({
    target,
    value: round(value, 3),
    limit: `${le ? "≤" : "≥"} ${limit}`,
    pass: le ? value <= limit : value >= limit,
  });

for (const size of SIZES) {
  if (!MODES.includes("native")) break;
  const native = get("native", size);
  const file = MODES.includes("file") ? get("file", size) : null;
  const git = MODES.includes("git") ? get("git", size) : null;
  const s = `${size} KiB`;
  if (file) check(`${s}: file-only run p50 / native at ${RUNS} runs`, p50At(file, RUNS) / p50At(native, RUNS), 1.5);
  if (git) {
    check(
      `${s}: (Git run p50 − native) / bare commit p50 at ${RUNS} runs`,
      (p50At(git, RUNS) - p50At(native, RUNS)) / git.bareCommitMs!.p50,
      1.3,
    );
    check(`${s}: git processes per accepted cohort`, git.gitPerCohort ?? NaN, 1);
    check(`${s}: git processes in store reads on the hot path, per run`, git.gitInStoreReadsPerRun, 0);
    if (RESUME_SAMPLES > 0) check(`${s}: Git resume git processes`, git.resume.gitProcesses, 2);
  }
  const stateFlow = [
    ["file-only", file],
    ["Git", git],
  ] as const;
  for (const [name, sf] of stateFlow) {
    if (!sf) continue;
    if (RESUME_SAMPLES > 0)
      check(`${s}: ${name} resume first context / native`, sf.resume.firstContextMs / native.resume.firstContextMs, 3);
    check(`${s}: ${name} growth (last ${WINDOW} / first ${WINDOW} of ${RUNS})`, sf.growth, 1.2);
  }
  for (const [name, sf] of stateFlow) {
    if (!sf) continue;
    for (const [n, limit] of [
      [Math.min(20, RUNS), 0.6],
      [Math.min(100, RUNS), 0.2],
    ] as const) {
      const key = `runs${n}`;
      const sfTokens = (sf.tokens as unknown as Record<string, { cached: number }>)[key]!;
      const nativeTokens = (native.tokens as unknown as Record<string, { cached: number }>)[key]!;
      check(
        `${s}: ${name} token cost with prefix cache / native over ${n} runs`,
        sfTokens.cached / nativeTokens.cached,
        limit,
      );
    }
    check(`${s}: ${name} within-run cache hit (p50 over runs)`, sf.tokens.withinRunCacheHit.p50, 0.9, false);
    const frozen = sf.tokens.ifContextFrozen as Record<string, { cached: number }> & { withinRunCacheHit: number };
    for (const n of TOKEN_RUNS) {
      const nativeTokens = (native.tokens as unknown as Record<string, { cached: number }>)[`runs${n}`]!;
      bounds.push([
        `${s}: ${name} token cost with prefix cache / native over ${n} runs`,
        frozen[`runs${n}`]!.cached / nativeTokens.cached,
      ]);
    }
    bounds.push([`${s}: ${name} within-run cache hit (p50 over runs)`, frozen.withinRunCacheHit]);
  }
}

const phases: Record<string, Record<string, number>> = {};
for (const c of cases) phases[c.id] = { run: round(p50(runMs(c.runs)), 3), ...phaseMedians(c.runs) };

// ---- print -----------------------------------------------------------------------------------

function table(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  "));
  console.log("");
}

console.log(
  `State Flow end to end — Pi ${VERSION}, faux model, ${cpus().length} cores, ${gitVersion}, ${RUNS} runs/case, ` +
    `${SIZES.map((s) => `${s} KiB`).join(" + ")} state, all cases interleaved in one process; load average ` +
    `${loadAtStart.map((x) => round(x)).join(" ")} at start, ` +
    `${loadAfterRuns.map((x) => round(x)).join(" ")} after the runs\n`,
);
table([
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
  ...cases.map((c) => {
    const s = summaries.get(c.id)!;
    const at = (n: number) => s.runMs[`runs${n}`] as { p50: number; p95: number };
    return [
      c.id,
      `${s.stateBytes}`,
      `${at(FIRST).p50}`,
      `${at(FIRST).p95}`,
      `${at(RUNS).p50}`,
      `${at(RUNS).p95}`,
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
table([
  [
    "case",
    ...TOKEN_RUNS.flatMap((n) => [`tokens@${n} no cache`, `tokens@${n} prefix cache`]),
    "within-run hit p50",
    "hit by inference",
    "resume first ctx ms",
    "resume bind ms",
    "resume git",
    "resume process ms",
  ],
  ...cases.map((c) => {
    const s = summaries.get(c.id)!;
    const t = s.tokens as unknown as Record<string, { uncached: number; cached: number }>;
    return [
      c.id,
      ...TOKEN_RUNS.flatMap((n) => [`${t[`runs${n}`]!.uncached}`, `${t[`runs${n}`]!.cached}`]),
      `${s.tokens.withinRunCacheHit.p50}`,
      s.tokens.hitByInference.join(" / "),
      `${s.resume.firstContextMs}`,
      `${s.resume.bindMs}`,
      `${s.resume.gitProcesses}`,
      `${s.resume.processWallMs}`,
    ];
  }),
]);
for (const c of cases) {
  const s = summaries.get(c.id)!;
  console.log(
    `${c.id} growth split: Pi ${s.msPi.first} → ${s.msPi.last} ms (${s.growthPi}×)` +
      (c.mode === "native"
        ? ""
        : `, State Flow ${s.msStateFlow.first} → ${s.msStateFlow.last} ms (${s.growthStateFlow}×)`),
  );
}
for (const c of cases) {
  const a = summaries.get(c.id)!.tokens.firstRequestAnatomy.last;
  if (a) console.log(`${c.id} run ${RUNS}, first request tokens: ${JSON.stringify(a)}`);
}
console.log(
  `git commands per run: ${cases
    .filter((c) => c.mode === "git")
    .map((c) => `${c.id} ${JSON.stringify(summaries.get(c.id)!.gitCommandsPerRun)}`)
    .join("; ")}`,
);
console.log(
  `git wrapper: git --version ${round(overhead.directMs)} ms direct, ${round(overhead.wrappedMs)} ms through it; ` +
    `after the runs (bench process RSS ${round(rssAfterRuns / 2 ** 20, 0)} MiB) ` +
    `${round(overheadAfterRuns.directMs)} ms direct, ${round(overheadAfterRuns.wrappedMs)} ms through it\n`,
);
table([
  ["target", "value", "limit", "result"],
  ...targets.map((t) => [t.target, `${t.value}`, t.limit, t.pass ? "PASS" : "FAIL"]),
]);
if (bounds.length > 0) {
  console.log("The token figures if an accepted patch had left the runtime context as it was for the rest of its run:");
  table([["figure", "value"], ...bounds.map(([figure, value]) => [figure, `${round(value, 3)}`])]);
}
/** A phase table: the wall-time rows (sorted), then the call counts on one line. */
function printPhases(title: string, rows: Record<string, number>, limit: number): void {
  console.log(title);
  // A "[State Flow]" split equal to its total says nothing more.
  const ms = Object.entries(rows).filter(
    ([k, v]) => !k.endsWith("(calls)") && !(k.endsWith(" [State Flow]") && rows[k.slice(0, -13)] === v),
  );
  table(ms.slice(0, limit).map(([k, v]) => [`  ${k}`, `${v}`]));
  const calls = Object.entries(rows).filter(([k]) => k.endsWith("(calls)") && !k.includes("["));
  if (calls.length > 0)
    console.log(`  calls per run: ${calls.map(([k, v]) => `${k.replace(" (calls)", "")} ${v}`).join(", ")}\n`);
}
for (const c of cases.filter((x) => x.mode !== "native" || x.sizeKiB === Math.min(...SIZES)))
  printPhases(`phases of a ${c.id} run (p50 ms per run over ${RUNS} runs):`, phases[c.id]!, 32);
for (const [id, rows] of Object.entries(detailPhases))
  printPhases(`detail pass ${id} (every fs call timed; p50 per run over ${PROFILE_RUNS} runs):`, rows, 45);
for (const [id, p] of Object.entries(profiles)) {
  console.log(`CPU profile ${id} (${p.runs} runs, ${p.totalMs} ms sampled; ms per run) — ${p.file}`);
  console.log(
    `  by owner: ${Object.entries(p.byOwner)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  );
  table([["  self", "ms/run", "%"], ...p.self.map((f) => [`  ${f.fn}`, `${f.msPerRun}`, `${f.percent}`])]);
  table([
    ["  State Flow inclusive", "ms/run", "%"],
    ...p.inclusive.map((f) => [`  ${f.fn}`, `${f.msPerRun}`, `${f.percent}`]),
  ]);
}
for (const [id, p] of Object.entries(resumeProfiles)) {
  console.log(`CPU profile of a resume process ${id} (open to first context, ${p.totalMs} ms sampled) — ${p.file}`);
  console.log(
    `  by owner (ms): ${Object.entries(p.byOwner)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  );
  table([["  self", "ms", "%"], ...p.self.map((f) => [`  ${f.fn}`, `${f.msPerRun}`, `${f.percent}`])]);
  table([
    ["  State Flow inclusive", "ms", "%"],
    ...p.inclusive.map((f) => [`  ${f.fn}`, `${f.msPerRun}`, `${f.percent}`]),
  ]);
}
if (missing.length > 0) console.log(`(not timed — method not found: ${missing.join(", ")})`);

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

const result = {
  pi: VERSION,
  node: process.version,
  git: gitVersion,
  cores: cpus().length,
  runs: RUNS,
  sizesKiB: SIZES,
  resumeSamples: RESUME_SAMPLES,
  loadavg: { start: loadAtStart.map((x) => round(x)), afterRuns: loadAfterRuns.map((x) => round(x)) },
  rssMiBAfterRuns: round(rssAfterRuns / 2 ** 20, 0),
  gitWrapperMs: {
    direct: round(overhead.directMs, 3),
    wrapped: round(overhead.wrappedMs, 3),
    directAfterRuns: round(overheadAfterRuns.directMs, 3),
    wrappedAfterRuns: round(overheadAfterRuns.wrappedMs, 3),
  },
  cases: Object.fromEntries(summaries),
  targets: targets.map((t) => [t.target, t.value, t.limit, t.pass ? "PASS" : "FAIL"]),
  tokensIfContextFrozen: bounds.map(([figure, value]) => [figure, round(value, 3)]),
  phases: trimmed(phases),
  profile: Object.fromEntries(Object.entries(profiles).map(([id, p]) => [id, compactProfile(p, 6)])),
  resumeProfile: Object.fromEntries(Object.entries(resumeProfiles).map(([id, p]) => [id, compactProfile(p, 5)])),
  totalSeconds: round((performance.now() - started) / 1000, 1),
};
console.log(`BENCH ${JSON.stringify(result)}`);
