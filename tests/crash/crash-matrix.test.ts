// The crash matrix: real Pi sessions in child OS processes (tests/crash/child.ts) publish
// State Flow cohorts and are SIGKILLed at a named write step (storage/fs/crash-points.ts); after each
// kill a fresh process reopens the same session file and store and must show exactly the old or
// the new cohort in every scope, keep every transition whose tool result was returned, leave
// `git fsck` clean (Git mode) and patch all scopes again after at most the documented recovery
// step. Only real processes and a real SIGKILL show what a crash leaves on disk; the table per
// mode and point says what each kill left.
//
// STATE_FLOW_CRASH_HITS (default 5; `npm run test:crash` sets 50) is the number of kills every
// point must see. STATE_FLOW_CRASH_JOBS (default 2) chains run at once; STATE_FLOW_CRASH_KEEP=1
// keeps the temp roots of chains that found a problem.

import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { KILL_POINTS, type KillPoint } from "../../storage/fs/crash-points.ts";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const childScript = join(repo, "tests/crash/child.ts");

const HITS = Number(process.env.STATE_FLOW_CRASH_HITS ?? 5);
const JOBS = Number(process.env.STATE_FLOW_CRASH_JOBS ?? 2);
const KEEP = process.env.STATE_FLOW_CRASH_KEEP === "1";
// A fresh store every few kills: early kills of a chain hit publications that do not fold yet,
// later ones publications that fold (a scope folds on its 8th record).
const CHAIN_LENGTH = 11;
// The n of `<point>#<n>`: each arrival count reaches another file of a publication, or another
// publication (odd: a patch commit, even: its response commit, for once-per-publication points).
const N_SEQUENCE = [1, 2, 3, 5, 8, 4, 6, 7, 9, 12];
// A target whose kill could not be judged (the chain broke before) is retried this often.
const MAX_RETRIES = 1;
const CHILD_TIMEOUT_MS = 60_000;
// Node's compile cache, shared by all children of this run: about 12% less startup (importing Pi
// dominates it), without changing what a child does.
const compileCache = mkdtempSync(join(tmpdir(), "sf-crash-cache-"));

const GIT_ONLY = KILL_POINTS.slice(KILL_POINTS.indexOf("index.copied"), KILL_POINTS.indexOf("index.installed") + 1);
type Mode = "git" | "file-only";
const MODE_POINTS: Record<Mode, readonly KillPoint[]> = {
  git: KILL_POINTS,
  "file-only": KILL_POINTS.filter((point) => !GIT_ONLY.includes(point)),
};

interface Target {
  point: KillPoint;
  n: number;
  retries: number;
}

interface ScopeReport {
  n: number | null;
  response: string | null;
  error?: string;
}

interface Report {
  label: string;
  sessionFile: string;
  startupMs: number;
  episode: string;
  scopes: Record<"global" | "cwd" | "session", ScopeReport>;
  restoreNotices: { message: string; level: string }[];
  notices: { message: string; level: string }[];
  recoverySteps: string[];
  loadErrors: string[];
}

interface Confirmation {
  label: string;
  attempt?: number;
  confirmed?: number;
  responded?: number;
  refused?: number;
  text?: string;
  uncommitted?: number;
  response?: string | null;
  error?: string;
  notices?: { message: string; level: string }[];
}

interface ChildResult {
  label: string;
  target: Target | null;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stderr: string;
  wallMs: number;
  report: Report | undefined;
  lines: Confirmation[];
}

/** A kill (or clean exit) the next report has to judge. */
interface Pending {
  child: ChildResult;
  killed: boolean;
  fsck: string | null;
  publication: string;
}

/** What the chain's processes recorded before the one that verifies (confirmations file lines). */
interface History {
  /** Highest run whose patch tool result was returned. */
  confirmed: number;
  /** Highest run whose patch was attempted. */
  attempted: number;
  /** Runs whose answer was seen committed as session.response. */
  responded: number[];
  /** Runs whose patch tool result was returned: only these reach their response commit. */
  confirmedRuns: number[];
}

interface Row {
  hits: number;
  recovered: number;
  lost: number;
  mixed: number;
  failed: number;
  notReached: number;
  untested: number;
  steps: Map<string, number>;
  publications: Map<string, number>;
}

interface ModeStats {
  rows: Map<KillPoint, Row>;
  /** One line per problem: what was wrong, where, with the verification output. */
  details: string[];
  wallMs: number[];
  startupMs: number[];
  children: number;
}

interface Chain {
  mode: Mode;
  id: string;
  root: string;
  store: string;
  env: NodeJS.ProcessEnv;
  sessionFile: string;
  report: string;
  confirmations: string;
  spawned: number;
  broken: boolean;
  /** Every child so far with how it ended: enough to replay the chain that led to a mix or a loss. */
  history: string[];
}

const stats: Record<Mode, ModeStats> = { git: emptyStats("git"), "file-only": emptyStats("file-only") };
let totalMs = 0;

function emptyStats(mode: Mode): ModeStats {
  const rows = new Map<KillPoint, Row>();
  for (const point of MODE_POINTS[mode]) {
    rows.set(point, {
      hits: 0,
      recovered: 0,
      lost: 0,
      mixed: 0,
      failed: 0,
      notReached: 0,
      untested: 0,
      steps: new Map(),
      publications: new Map(),
    });
  }
  return { rows, details: [], wallMs: [], startupMs: [], children: 0 };
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** Kill targets of one mode: HITS rounds over its points, rotated so a point sits early and late in chains. */
function targetsOf(mode: Mode): Target[] {
  const points = MODE_POINTS[mode];
  const targets: Target[] = [];
  for (let round = 0; round < HITS; round += 1) {
    const shift = (round * 3) % points.length;
    const rotated = [...points.slice(shift), ...points.slice(0, shift)];
    rotated.forEach((point, index) => {
      targets.push({ point, n: N_SEQUENCE[(round + index) % N_SEQUENCE.length]!, retries: 0 });
    });
  }
  return targets;
}

/** The env of every process of a chain: isolated HOME, agent dir and Git identity; file-only: no git on PATH. */
function chainEnv(mode: Mode, root: string): NodeJS.ProcessEnv {
  const gitConfig = join(root, "gitconfig");
  writeFileSync(gitConfig, "");
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(GIT_|PI_|STATE_FLOW_|VITEST|NODE_OPTIONS$)/.test(key)) env[key] = value;
  }
  Object.assign(env, {
    HOME: join(root, "home"),
    PI_CODING_AGENT_DIR: join(root, "agent"),
    PI_OFFLINE: "1",
    NODE_COMPILE_CACHE: compileCache,
    GIT_CONFIG_GLOBAL: gitConfig,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "State Flow Crash Test",
    GIT_AUTHOR_EMAIL: "crash-test@state-flow.invalid",
    GIT_COMMITTER_NAME: "State Flow Crash Test",
    GIT_COMMITTER_EMAIL: "crash-test@state-flow.invalid",
  });
  // The same directory PiHarness gives the extension with git:false; the child itself needs no PATH.
  if (mode === "file-only") env.PATH = join(root, "no-git-bin");
  return env;
}

function readJsonLines<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);
}

function spawnChild(chain: Chain, target: Target | null, maxRuns: number): Promise<ChildResult> {
  const label = `${chain.id}.${chain.spawned++}${target ? `@${target.point}#${target.n}` : ""}`;
  const args = [
    "--experimental-strip-types",
    "--disable-warning=ExperimentalWarning",
    childScript,
    "--root",
    chain.root,
    "--mode",
    chain.mode === "git" ? "git" : "file",
    "--session",
    chain.sessionFile,
    "--report",
    chain.report,
    "--confirmations",
    chain.confirmations,
    "--max-runs",
    String(maxRuns),
    "--label",
    label,
    ...(target ? ["--arm", `${target.point}#${target.n}`] : []),
  ];
  const env = chain.env;
  const started = performance.now();
  return new Promise((done, fail) => {
    const cwd = join(chain.root, "project");
    const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    let timedOut = false;
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    // Our own kill must not pass for the armed point's: timedOut tells them apart.
    const timer = setTimeout(() => ((timedOut = true), child.kill("SIGKILL")), CHILD_TIMEOUT_MS);
    child.on("error", fail);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const wallMs = Math.round(performance.now() - started);
      const report = readJsonLines<Report>(chain.report).find((line) => line.label === label);
      const lines = readJsonLines<Confirmation>(chain.confirmations).filter((line) => line.label === label);
      const modeStats = stats[chain.mode];
      modeStats.children += 1;
      modeStats.wallMs.push(wallMs);
      if (report) modeStats.startupMs.push(report.startupMs);
      chain.history.push(`${label} ${signal ?? `exit ${code}`}`);
      done({ label, target, code, signal, timedOut, stderr, wallMs, report, lines });
    });
  });
}

function historyBefore(chain: Chain, verifier: ChildResult): History {
  const lines = readJsonLines<Confirmation>(chain.confirmations).filter((line) => line.label !== verifier.label);
  const max = (values: (number | undefined)[]) => Math.max(0, ...values.map((value) => value ?? 0));
  return {
    confirmed: max(lines.map((line) => line.confirmed)),
    attempted: max(lines.map((line) => line.attempt)),
    responded: lines.flatMap((line) => (line.responded === undefined ? [] : [line.responded])),
    confirmedRuns: lines.flatMap((line) => (line.confirmed === undefined ? [] : [line.confirmed])),
  };
}

/**
 * The responses a state at run n may hold: the newest answer seen committed up to n, or the
 * answer of a later run up to n whose response commit started (its patch was confirmed) and may
 * have become durable before the process died, unseen. Not simply n or n-1: after a kill in run
 * n's response commit, run n+1's patch leaves answer n-1 beside n+1.
 */
function allowedResponses(n: number, history: History): string[] {
  const committed = Math.max(0, ...history.responded.filter((j) => j <= n));
  const started = history.confirmedRuns.filter((j) => j > committed && j <= n);
  return [...new Set([committed, ...started])].sort((a, b) => a - b).map((j) => `answer ${j}`);
}

function fsck(chain: Chain): string | null {
  if (chain.mode !== "git") return null;
  const result = spawnSync("git", ["-C", chain.store, "fsck", "--no-dangling"], { env: chain.env, encoding: "utf8" });
  if (result.status === 0 && result.stderr.trim() === "") return null;
  return `git fsck exited ${result.status}: ${(result.stderr + result.stdout).trim().slice(0, 600)}`;
}

/**
 * Which publication the kill interrupted, from the child's own lines: its last attempted run j,
 * confirmed (the response commit) or not (the patch commit). "fold" assumes one record per
 * scope and commit from an empty store: the session scope's 8th record is the patch of run 5 or
 * the response of run 4, global's and cwd's the patch of run 8.
 */
function publicationOf(child: ChildResult): string {
  const attempts = child.lines.filter((line) => line.attempt !== undefined);
  const last = attempts[attempts.length - 1]?.attempt;
  if (last === undefined) return "recovery";
  const response = child.lines.some((line) => line.confirmed === last);
  const fold = response ? last >= 4 : last >= 5;
  return `${response ? "response" : "patch"}${fold ? "+fold" : ""}`;
}

type Problem = { kind: "lost" | "mixed" | "failed"; text: string };

// README Troubleshooting: delete the lock file the message names, then retry /state-flow-start.
const DOCUMENTED_STEPS = [/^rm \S+\/\.?state-flow-publication\.lock$/, /^\/state-flow-start$/];

function scopeValue(read: ScopeReport): string {
  return read.error ? `error(${read.error})` : String(read.n);
}

/** Checks (a)–(e) for one kill against the report and lines of the process that reopened the store. */
function judge(pending: Pending, next: ChildResult, history: History): Problem[] {
  const report = next.report!;
  const problems: Problem[] = [];
  const failed = (text: string) => problems.push({ kind: "failed", text });
  const values = Object.entries(report.scopes).map(([scope, read]) => `${scope}=${scopeValue(read)}`);
  const reads = Object.values(report.scopes);
  const n = report.scopes.session.n;
  // Unreadable is a failed recovery, not a mix: a mix needs values that disagree.
  if (reads.some((read) => read.n === null)) failed(`scopes unreadable: ${values.join(" ")}`);
  else if (new Set(reads.map((read) => read.n)).size !== 1) {
    problems.push({ kind: "mixed", text: `scopes differ: ${values.join(" ")}` });
  }
  if (n !== null) {
    const response = report.scopes.session.response;
    const allowed = allowedResponses(n, history);
    if (!allowed.includes(response ?? "")) {
      const text = `session.response ${JSON.stringify(response)} does not belong to n=${n} (${allowed.join(" or ")})`;
      problems.push({ kind: "mixed", text });
    }
    if (n < history.confirmed) {
      problems.push({ kind: "lost", text: `n=${n} but run ${history.confirmed}'s tool result was returned` });
    }
    if (n > history.attempted) failed(`n=${n} but no run after ${history.attempted} was attempted`);
  }
  if (pending.fsck) failed(pending.fsck);
  if (!report.episode.startsWith("active")) {
    const taken = report.recoverySteps.length;
    failed(`episode ${report.episode} after ${taken} recovery step(s); notices: ${noticeText(report)}`);
  }
  if (report.loadErrors.length > 0) failed(`extension load errors: ${report.loadErrors.join("; ")}`);
  const steps = report.recoverySteps;
  const documented =
    steps.length === 0 || (steps.length === 2 && steps.every((step, i) => DOCUMENTED_STEPS[i]!.test(step)));
  if (!documented) {
    failed(`recovery took ${steps.length} step(s) [${steps.join(" → ")}]; notices: ${noticeText(report)}`);
  }
  const refused = next.lines.find((line) => line.refused !== undefined);
  if (refused) failed(`next patch (run ${refused.refused}) refused: ${refused.text}`);
  else if (!patchVerified(next)) failed("the next process did not get a patch of all three scopes accepted");
  const uncommitted = next.lines.find((line) => line.uncommitted !== undefined);
  if (uncommitted) failed(uncommittedText(uncommitted));
  return problems;
}

function uncommittedText(line: Confirmation): string {
  const notices = (line.notices ?? []).map((notice) => `${notice.level}: ${notice.message}`);
  const found = `${JSON.stringify(line.response)}${line.error ? `, ${line.error}` : ""}`;
  return (
    `run ${line.uncommitted}'s answer did not become session.response (it is ${found}); ` +
    `notices: ${JSON.stringify(notices)}`
  );
}

/** The notices Pi's UI received, each distinct one once with its count. */
function noticeText(report: Report): string {
  const counts = new Map<string, number>();
  for (const notice of report.notices) bump(counts, `${notice.level}: ${notice.message}`);
  return [...counts].map(([text, count]) => `${count > 1 ? `${count}× ` : ""}${JSON.stringify(text)}`).join(", ");
}

function patchVerified(next: ChildResult): boolean {
  const n = next.report?.scopes.session.n;
  return n !== null && n !== undefined && next.lines.some((line) => line.confirmed === n + 1);
}

function stepsKey(report: Report): string {
  if (report.recoverySteps.length === 0) return "none";
  const short = (step: string) =>
    step.startsWith("rm ") ? "rm lock" : step.startsWith("/state-flow-start (") ? "start(retry)" : "start";
  return report.recoverySteps.map(short).join("+");
}

/** Records the verdicts on every pending kill; returns whether the chain is still sound. */
function settle(chain: Chain, pending: Pending[], next: ChildResult): boolean {
  const modeStats = stats[chain.mode];
  let sound = true;
  const history = historyBefore(chain, next);
  for (const item of pending) {
    const problems = judge(item, next, history);
    if (problems.length > 0) sound = false;
    const where = `${chain.mode} ${item.child.label} (verified by ${next.label})`;
    const text = problems.map((problem) => `${problem.kind}: ${problem.text}`).join(" || ");
    if (problems.length > 0) modeStats.details.push(`${where}: ${text}`);
    if (problems.some((problem) => problem.kind !== "failed")) {
      modeStats.details.push(`${where}: the chain so far: ${chain.history.join(" → ")}`);
    }
    if (!item.killed) continue;
    const row = modeStats.rows.get(item.child.target!.point)!;
    row.hits += 1;
    bump(row.publications, item.publication);
    bump(row.steps, stepsKey(next.report!));
    if (problems.some((p) => p.kind === "lost")) row.lost += 1;
    if (problems.some((p) => p.kind === "mixed")) row.mixed += 1;
    if (problems.some((p) => p.kind === "failed")) row.failed += 1;
    if (problems.length === 0) row.recovered += 1;
  }
  return sound;
}

function retry(chain: Chain, target: Target, retries: Target[], why: string): void {
  if (target.retries < MAX_RETRIES) {
    retries.push({ ...target, retries: target.retries + 1 });
    return;
  }
  stats[chain.mode].rows.get(target.point)!.untested += 1;
  stats[chain.mode].details.push(`${chain.mode} ${target.point}#${target.n}: untested, its chain broke again (${why})`);
}

function childFailure(child: ChildResult): string {
  const how = child.timedOut ? `timed out after ${CHILD_TIMEOUT_MS} ms` : `exited ${child.code ?? child.signal}`;
  const refused = child.lines.find((line) => line.refused !== undefined);
  if (refused) return `${child.label} ${how}: run ${refused.refused} refused: ${refused.text}`;
  const uncommitted = child.lines.find((line) => line.uncommitted !== undefined);
  if (uncommitted) return `${child.label} ${how}: ${uncommittedText(uncommitted)}`;
  return `${child.label} ${how}: ${child.stderr.trim().slice(-800) || "(no stderr)"}`;
}

/** A fresh root and store with the setup child's session (one unarmed run). */
async function openChain(mode: Mode, id: string): Promise<Chain | string> {
  const root = mkdtempSync(join(tmpdir(), `sf-crash-${mode}-`));
  for (const dir of ["agent", "project", "sessions", "home", "no-git-bin"]) mkdirSync(join(root, dir));
  const chain: Chain = {
    mode,
    id,
    root,
    store: join(root, "agent", "state-flow"),
    env: chainEnv(mode, root),
    sessionFile: "",
    report: join(root, "report.jsonl"),
    confirmations: join(root, "confirmations.jsonl"),
    spawned: 0,
    broken: false,
    history: [],
  };
  const setup = await spawnChild(chain, null, 0);
  if (setup.code !== 0 || !setup.report) {
    if (!KEEP) rmSync(root, { recursive: true, force: true });
    return `setup ${childFailure(setup)}${KEEP ? ` (kept ${root})` : ""}`;
  }
  chain.sessionFile = setup.report.sessionFile;
  return chain;
}

function closeChain(chain: Chain): void {
  const damage = fsck(chain);
  if (damage) {
    stats[chain.mode].details.push(`${chain.id}: at the end of the chain: ${damage}`);
    chain.broken = true;
  }
  if (chain.mode === "file-only" && existsSync(join(chain.store, ".git"))) {
    stats[chain.mode].details.push(`${chain.id}: the file-only store has a .git directory (git was reachable)`);
    chain.broken = true;
  }
  if (!chain.broken || !KEEP) {
    rmSync(chain.root, { recursive: true, force: true });
    return;
  }
  // Moved aside: a restart restores the template at the root's own path.
  const kept = `${chain.root}.${chain.id}`;
  renameSync(chain.root, kept);
  stats[chain.mode].details.push(`${chain.id}: kept ${kept}`);
}

/**
 * The chain's setup state again, at the same path (the session file and the store's cwd key name
 * it): a copy of what the setup child left, with timestamps, instead of a second setup process.
 */
function restartChain(first: Chain, template: string, attempt: number): Chain {
  cpSync(template, first.root, { recursive: true, preserveTimestamps: true });
  return { ...first, id: `${first.id}r${attempt}`, broken: false, history: first.history.slice(0, 1), spawned: 1 };
}

function pendingOf(chain: Chain, child: ChildResult, killed: boolean): Pending {
  return { child, killed, fsck: killed ? fsck(chain) : null, publication: killed ? publicationOf(child) : "clean" };
}

/**
 * Runs one chain of children: each verifies what the previous kill left and is armed at the
 * next target; an unarmed last child verifies the last kill. Returns the targets to retry in a
 * fresh store because the chain broke before they could be judged.
 */
async function advance(chain: Chain, queue: Target[]): Promise<Target[]> {
  const modeStats = stats[chain.mode];
  const retries: Target[] = [];
  let pending: Pending[] = [];
  for (;;) {
    const target = queue.shift() ?? null;
    const child = await spawnChild(chain, target, target ? target.n + 1 : 1);
    const killed = child.signal === "SIGKILL" && !child.timedOut;
    if (child.report) {
      const sound = settle(chain, pending, child);
      pending = [];
      if (!sound) {
        chain.broken = true;
        if (target) retry(chain, target, retries, "a previous kill was not recovered");
        return [...retries, ...queue];
      }
    }
    if (!killed && child.code !== 0) {
      chain.broken = true;
      modeStats.details.push(`${chain.mode} ${childFailure(child)}`);
      if (target) retry(chain, target, retries, "a child failed");
      return [...retries, ...queue];
    }
    if (target === null) return retries;
    if (killed) pending.push(pendingOf(chain, child, true));
    else {
      modeStats.rows.get(target.point)!.notReached += 1;
      pending.push(pendingOf(chain, child, false));
    }
  }
}

/** One chunk of targets; after a chain broke, the rest runs on a fresh copy of the setup state. */
async function runChains(mode: Mode, index: number, targets: Target[]): Promise<void> {
  const id = `${mode}-${index}`;
  const first = await openChain(mode, id);
  if (typeof first === "string") {
    stats[mode].details.push(`${id}: ${first}`);
    for (const target of targets) stats[mode].rows.get(target.point)!.untested += 1;
    return;
  }
  const template = `${first.root}.template`;
  cpSync(first.root, template, { recursive: true, preserveTimestamps: true });
  let chain = first;
  for (let attempt = 1; ; attempt += 1) {
    const queue = await advance(chain, targets);
    closeChain(chain);
    if (queue.length === 0) break;
    targets = queue;
    chain = restartChain(first, template, attempt);
  }
  rmSync(template, { recursive: true, force: true });
}

/** JOBS workers over all chains of both modes, interleaved so both modes progress together. */
async function runMatrix(): Promise<void> {
  const started = performance.now();
  const jobs: (() => Promise<void>)[] = [];
  const byMode = (["git", "file-only"] as const).map((mode) => {
    const targets = targetsOf(mode);
    const chunks: (() => Promise<void>)[] = [];
    for (let i = 0; i * CHAIN_LENGTH < targets.length; i += 1) {
      chunks.push(() => runChains(mode, i, targets.slice(i * CHAIN_LENGTH, (i + 1) * CHAIN_LENGTH)));
    }
    return chunks;
  });
  for (let i = 0; i < Math.max(...byMode.map((chunks) => chunks.length)); i += 1) {
    for (const chunks of byMode) if (chunks[i]) jobs.push(chunks[i]!);
  }
  const worker = async () => {
    for (let job = jobs.shift(); job; job = jobs.shift()) await job();
  };
  await Promise.all(Array.from({ length: JOBS }, worker));
  totalMs = Math.round(performance.now() - started);
  rmSync(compileCache, { recursive: true, force: true });
}

function mapText(map: Map<string, number>): string {
  return [...map].map(([key, count]) => `${key}×${count}`).join(", ") || "-";
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

const COLUMNS = ["point", "hits", "recovered", "lost", "mixed", "failed", "not-reached", "untested"].concat(
  "recovery steps",
  "publications",
);

function table(mode: Mode): string {
  const modeStats = stats[mode];
  const rows = [COLUMNS];
  for (const [point, row] of modeStats.rows) {
    const { hits, recovered, lost, mixed, failed, notReached, untested } = row;
    const counts = [hits, recovered, lost, mixed, failed, notReached, untested];
    rows.push([point, ...counts.map(String), mapText(row.steps), mapText(row.publications)]);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((cells) => cells[column]!.length)));
  const lines = rows.map((cells) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join(" | ")
      .trimEnd(),
  );
  const { startupMs, wallMs } = modeStats;
  return [
    `crash matrix, ${mode}: ≥ ${HITS} judged kills per point`,
    ...lines,
    `${modeStats.children} children; startup (process start → session bound) ` +
      `median ${percentile(startupMs, 0.5)} ms, p90 ${percentile(startupMs, 0.9)} ms; ` +
      `wall per child median ${percentile(wallMs, 0.5)} ms, p90 ${percentile(wallMs, 0.9)} ms, ` +
      `max ${Math.max(0, ...wallMs)} ms; matrix ${totalMs} ms for both modes with ${JOBS} jobs`,
  ].join("\n");
}

/** Everything that makes a mode fail: problems found, and points with fewer judged kills than required. */
function failures(mode: Mode): string[] {
  const list = [...stats[mode].details.filter((line) => !line.includes(": kept "))];
  for (const [point, row] of stats[mode].rows) {
    if (row.hits >= HITS) continue;
    list.push(`${mode} ${point}: ${row.hits} judged kill(s) of ${HITS} required (${row.notReached} not reached)`);
  }
  return list;
}

/** Details in kill-point order (the point a line is about is the `@<point>#` of its first label). */
function byPoint(details: string[]): string[] {
  const rank = (line: string) => {
    const point = /@([a-z.]+)#/.exec(line)?.[1];
    return point ? KILL_POINTS.indexOf(point as KillPoint) : KILL_POINTS.length;
  };
  return [...details].sort((a, b) => rank(a) - rank(b));
}

describe("crash matrix: SIGKILL at every publication write step, recovery in a fresh Pi process", () => {
  beforeAll(
    async () => {
      await runMatrix();
      for (const mode of ["git", "file-only"] as const) {
        console.log(
          `${table(mode)}\n${byPoint(stats[mode].details)
            .map((line) => `  - ${line}`)
            .join("\n")}`,
        );
      }
    },
    Math.max(600_000, HITS * 90_000),
  );

  for (const mode of ["git", "file-only"] as const) {
    it(`${mode}: every point is hit ≥ ${HITS} times and every kill recovers to the old or the new cohort`, () => {
      expect(MODE_POINTS[mode].length).toBe(mode === "git" ? KILL_POINTS.length : KILL_POINTS.length - 12);
      expect(byPoint(failures(mode)), table(mode)).toEqual([]);
    });
  }
});
