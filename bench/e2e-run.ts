// The cases of `npm run bench` (bench/e2e.ts) and how one run, one resume and the git wrapper's
// own cost are measured. A case is one Pi session (native, or State Flow file-only or with Git) at
// one state size running one workload (bench/e2e-fixture.ts); every run is checked to have gone
// exactly as scripted, or the bench stops.

import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Context, SimpleStreamOptions } from "@earendil-works/pi-ai";
import { scriptedSteps, type ToolArgs } from "../adapters/pi/offline-session.ts";
import { providerRequest } from "../adapters/pi/provider-request.ts";
import { findGitExecutable } from "../storage/git/git-runner.ts";
import { anthropicPayload, type AnthropicPayload } from "./anthropic-payload.ts";
import type { Request, Run } from "./cost-model.ts";
import type { BenchConfig, Mode } from "./e2e-config.ts";
import {
  COST_SIZES,
  nativeStateFile,
  runScript,
  seedState,
  stateLine,
  storeFiles,
  writeInputs,
  type CostCase,
} from "./e2e-fixture.ts";
import type { Seed, Workload } from "./e2e-fixture.ts";
import { phaseTable, takeIntervals, type Interval } from "./e2e-phases.ts";
import { gitWrapper, isolatedBenchGitEnv, openBenchSession, type BenchSession, type CaseDirs } from "./e2e-session.ts";
import { p50, round, sum } from "./e2e-stats.ts";
import { PrefixCache, type BilledRequest, type CapturedRequest } from "./e2e-tokens.ts";

const CHILD = fileURLToPath(new URL("./e2e-resume-child.ts", import.meta.url));

/** Where the bench works: its temporary folder, Pi's agent dir, the environments git runs with. */
export interface BenchEnv {
  readonly work: string;
  readonly agentDir: string;
  readonly realGit: string;
  /** Git identity and config isolated from the user's. */
  readonly baseEnv: NodeJS.ProcessEnv;
  /** A PATH without git (file-only cases). */
  readonly noGitPath: string;
}

/** A fresh temporary folder (removed on Ctrl-C too) and one Pi agent dir for every session. */
export function createBenchEnv(): BenchEnv {
  const realGit = findGitExecutable(process.env);
  if (!realGit) throw new Error("npm run bench needs git on PATH");
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
  const noGitPath = join(work, "no-git-bin");
  mkdirSync(noGitPath);
  return { work, agentDir, realGit, baseEnv: isolatedBenchGitEnv(work), noGitPath };
}

export function runGit(args: string[], cwd: string, env: NodeJS.ProcessEnv, git: string): Promise<string> {
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
export class GitCounter {
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

export interface RunRecord {
  run: number;
  ms: number;
  /** The git wrapper's lines for this run (one per process). */
  git: string[];
  cohorts: number;
  /** Git processes that ran inside a store read (GitBackend.loadCurrent / loadRevision). */
  readGit: number;
  storeReads: number;
  phases: Record<string, number>;
  /** The provider requests of this run as their elements (priced by bench/cost-model.ts). */
  priced: Request[];
  requests: BilledRequest[];
  /**
   * State Flow: the same requests billed as if the runtime context had stayed what the run's first
   * request sent (an accepted patch changing nothing before the trajectory); see `frozenContext`.
   */
  frozenRequests: BilledRequest[];
  /** Input tokens of the run's first request by part (tools, system prompt, first message, the rest). */
  anatomy?: { tools: number; system: number; firstMessage: number; rest: number };
  bareMs?: number;
  bareGit?: number;
}

export interface Case {
  id: string;
  mode: Mode;
  sizeKiB: number;
  workload: Workload;
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

export interface CaseOptions {
  readonly mode: Mode;
  readonly sizeKiB: number;
  /** Appended to the case id (`-warmup`, `-qa` …). */
  readonly label: string;
  readonly workload?: Workload;
  /** Time State Flow's hooks and tools (bench/e2e-phases.ts); the cost-only cases do not. */
  readonly timed?: boolean;
}

export async function openCase(env: BenchEnv, options: CaseOptions): Promise<Case> {
  const { mode, sizeKiB } = options;
  const id = `${mode}-${sizeKiB}KiB${options.label}`;
  const root = join(env.work, id);
  const dirs: CaseDirs = {
    cwd: join(root, "project"),
    sessionDir: join(root, "sessions"),
    storeRoot: join(root, "store"),
    gitCounter: join(root, "git-processes.log"),
  };
  mkdirSync(dirs.cwd, { recursive: true });
  writeInputs(dirs.cwd);
  const wrapper = gitWrapper(join(root, "git-bin"), env.realGit, dirs.gitCounter);
  const caseEnv = {
    ...env.baseEnv,
    PATH: mode === "git" ? `${wrapper}${delimiter}${env.baseEnv.PATH ?? ""}` : env.noGitPath,
  };
  const timed = options.timed ?? true;
  const bench = await openBenchSession({ mode, agentDir: env.agentDir, dirs, env: caseEnv, timed });
  const seed = seedState(sizeKiB);
  const c: Case = {
    id,
    mode,
    sizeKiB,
    workload: options.workload ?? "bench",
    dirs,
    env: caseEnv,
    bench,
    seed,
    notes: Object.values(seed.notes),
    counter: new GitCounter(dirs.gitCounter),
    cache: new PrefixCache(),
    frozenCache: new PrefixCache(),
    runs: [],
  };
  if (mode === "native") {
    writeFileSync(join(dirs.cwd, "state.md"), nativeStateFile(seed));
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
  if (mode === "git" && timed) {
    const repo = join(root, "bare");
    const bareCounter = join(root, "bare-git-processes.log");
    const git = join(gitWrapper(join(root, "bare-git-bin"), env.realGit, bareCounter), "git");
    for (const [path, bytes] of storeFiles(dirs.storeRoot)) {
      mkdirSync(dirname(join(repo, path)), { recursive: true });
      writeFileSync(join(repo, path), bytes);
    }
    await runGit(["init", "-q"], repo, env.baseEnv, env.realGit);
    await runGit(["add", "-A"], repo, env.baseEnv, env.realGit);
    await runGit(["commit", "-q", "-m", "seed"], repo, env.baseEnv, env.realGit);
    c.bare = { repo, env: env.baseEnv, git, counter: new GitCounter(bareCounter) };
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

export interface RunOptions {
  /** Bill the requests and run the bare baseline (off while profiling). */
  account: boolean;
}

/** One run of the case's workload, checked to have gone exactly as scripted. */
export async function runOnce(c: Case, run: number, options: RunOptions): Promise<RunRecord> {
  const script = runScript(c.workload, c.mode, run, c.seed, c.notes);
  const steps = [...script.calls.map((s) => call(s.name, s.args as ToolArgs)), say(script.answer)];
  const captured: CapturedRequest[] = [];
  const payloads: AnthropicPayload[] = [];
  let benchMs = 0;
  c.bench.faux.appendResponses(
    steps.map((step) => async (context: Context, streamOptions: SimpleStreamOptions | undefined) => {
      const t = performance.now();
      // Only the references are kept here; billing runs after the run, outside its timing.
      const request = providerRequest(context);
      captured.push({ systemPrompt: request.systemPrompt, tools: request.tools, messages: [...request.messages] });
      // The Anthropic payload now, through the session's before_provider_request handlers: State
      // Flow's depends on the runtime context it sent for this request.
      if (options.account) payloads.push(await anthropicPayload(context, streamOptions?.onPayload));
      benchMs += performance.now() - t;
      return step();
    }),
  );
  const before = options.account && c.bare ? storeFiles(c.dirs.storeRoot) : null;
  takeIntervals();
  const t0 = performance.now();
  await c.bench.session.prompt(script.prompt);
  await c.bench.session.waitForIdle();
  const ms = performance.now() - t0 - benchMs;
  const intervals = takeIntervals();
  // The run must have been exactly the scripted one, or its figures are not this workload's.
  const pending = c.bench.faux.getPendingResponseCount();
  if (pending > 0) throw new Error(`${c.id} run ${run}: ${pending} scripted step(s) unused`);
  const errors = c.bench.notices.filter((n) => n.level === "error" || n.level === "warning").splice(0);
  if (errors.length > 0) throw new Error(`${c.id} run ${run}: ${errors.map((e) => e.message).join("; ")}`);
  if (c.mode === "native") {
    const note = script.note;
    if (note && !readFileSync(join(c.dirs.cwd, "state.md"), "utf8").includes(stateLine(note.key, note.text)))
      throw new Error(`${c.id} run ${run}: the edit did not land`);
  } else if (c.bench.accessor!.read(0, "session").state.response !== script.answer) {
    const results = c.bench.session.messages
      .filter((m) => m.role === "toolResult")
      .slice(-2)
      .map((m) => JSON.stringify((m as { content: unknown }).content).slice(0, 400));
    throw new Error(`${c.id} run ${run}: the answer was not accepted as session.response; ${results.join(" | ")}`);
  }
  if (script.note) c.notes[script.note.k] = script.note.text;
  const git = c.counter.take();
  const record: RunRecord = {
    run,
    ms,
    git,
    cohorts: intervals.filter((i) => i.name === "GitBackend.publish" || i.name === "FileBackend.publish").length,
    ...storeReads(intervals),
    phases: phaseTable(intervals, ms),
    // Kept as interned elements, not as Pi's messages: a long native session's requests would
    // otherwise hold a copy of its transcript each.
    priced: options.account
      ? captured.map((r, i) => ({ elements: c.cache.elements(r), cache: c.cache.anthropic(payloads[i]!) }))
      : [],
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
export function frozenContext(requests: readonly CapturedRequest[]): CapturedRequest[] {
  const context = requests[0]?.messages[0];
  if (!context) return [...requests];
  return requests.map((r) => ({ ...r, messages: [context, ...r.messages.slice(1)] }));
}

/** Store reads on the hot path and the git processes that ran inside them. */
export function storeReads(intervals: readonly Interval[]): { readGit: number; storeReads: number } {
  const reads = intervals.filter((i) => /^(Git|File)Backend\.load(Current|Revision)$/.test(i.name));
  const inside = intervals.filter(
    (i) => i.name.startsWith("git:") && reads.some((r) => r.start <= i.start && i.end <= r.end),
  );
  return { readGit: inside.length, storeReads: reads.length };
}

export const runMs = (records: readonly RunRecord[]) => records.map((r) => r.ms);

/** The p50 over runs of each phase's per-run wall time (ms) or call count. */
export function phaseMedians(records: readonly RunRecord[]): Record<string, number> {
  const names = new Set(records.flatMap((r) => Object.keys(r.phases)));
  const out: [string, number][] = [];
  for (const name of names) out.push([name, round(p50(records.map((r) => r.phases[name] ?? 0)), 3)]);
  return Object.fromEntries(out.filter(([, v]) => v >= 0.01).sort((a, b) => b[1] - a[1]));
}

export interface ResumeSample {
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
export async function resumeSample(
  env: BenchEnv,
  c: Case,
  sample: number,
  profileFile?: string,
): Promise<ResumeSample> {
  const dir = join(env.work, "resume", `${c.id}-${sample}`);
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
  const wrapper = gitWrapper(join(dir, "git-bin"), env.realGit, dirs.gitCounter);
  const childEnv = c.mode === "git" ? { ...c.env, PATH: `${wrapper}${delimiter}${env.baseEnv.PATH ?? ""}` } : c.env;
  const resultFile = join(dir, "result.json");
  const input = {
    mode: c.mode,
    agentDir: env.agentDir,
    dirs,
    env: childEnv,
    sessionFile: join(dirs.sessionDir, basename(sessionFile)),
    resultFile,
    ...(profileFile ? { profileFile } : {}),
  };
  const t = performance.now();
  const stderr = await new Promise<string>((done, fail) => {
    const child = spawn(process.execPath, ["--experimental-strip-types", CHILD, JSON.stringify(input)], {
      env: { ...process.env, PI_CODING_AGENT_DIR: env.agentDir, PI_OFFLINE: "1" },
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

export interface WrapperOverhead {
  directMs: number;
  wrappedMs: number;
}

/** The wrapper's own cost per git process (a shell exec), so the figures can be read without it. */
export async function wrapperOverhead(env: BenchEnv): Promise<WrapperOverhead> {
  const counter = join(env.work, "overhead.log");
  const wrapped = join(gitWrapper(join(env.work, "overhead-bin"), env.realGit, counter), "git");
  const direct: number[] = [];
  const via: number[] = [];
  for (let i = 0; i < 33; i++) {
    let t = performance.now();
    await runGit(["--version"], env.work, env.baseEnv, env.realGit);
    const d = performance.now() - t;
    t = performance.now();
    await runGit(["--version"], env.work, env.baseEnv, wrapped);
    if (i >= 3) (direct.push(d), via.push(performance.now() - t));
  }
  return { directMs: p50(direct), wrappedMs: p50(via) };
}

/** A case's captured requests as the cost model's runs (each request as its elements). */
export const pricedRuns = (c: Case): Run[] => c.runs.map((r) => r.priced);

/**
 * The cost model's extra workloads (qa, heavy): a native and a State Flow (file-only; Git sends
 * the same requests) session per workload and size, run in turn, untimed; only their requests count.
 */
export async function runCostWorkloads(env: BenchEnv, config: BenchConfig): Promise<CostCase[]> {
  const out: CostCase[] = [];
  for (const workload of config.costWorkloads) {
    for (const sizeKiB of COST_SIZES[workload]) {
      const pair: Case[] = [];
      try {
        for (const mode of ["native", "file"] as const)
          pair.push(await openCase(env, { mode, sizeKiB, label: `-${workload}`, workload, timed: false }));
        for (let run = 1; run <= config.costRuns; run++)
          for (const c of pair) c.runs.push(await runOnce(c, run, { account: true }));
        out.push({ workload, sizeKiB, native: pricedRuns(pair[0]!), stateFlow: pricedRuns(pair[1]!) });
      } finally {
        for (const c of pair) await c.bench.session.dispose?.();
      }
      process.stderr.write(`  … cost workload ${workload} ${sizeKiB} KiB: ${config.costRuns} runs\n`);
    }
  }
  return out;
}
