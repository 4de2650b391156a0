// npm run bench:store — cost of one accepted cohort in file-only and Git mode, as ratios to
// baselines measured in the same run, plus loading the current view of a 1,000-commit store.
//
//   file-only baseline: one writeFile + rename of the same bytes;
//   Git baseline:       writing the same files + `git add -A` + `git commit` in a scratch repo.
//
// Each baseline iteration runs right after the measured iteration (interleaved), so both see the
// same machine load; figures are medians. A breakdown explains where the Git cohort's time goes:
// per git process wall time (spawn to close), the cost of a bare process spawn (direct
// node:child_process vs simple-git, interleaved), and the fsync-bearing live-file write alone.
//
// Prints a table and ends with one line `BENCH {json}`. Never asserts timings.

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { FileBackend } from "../storage/file/file-backend.ts";
import { openGitBackend } from "../storage/git/git-backend.ts";
import { writeOwnedFilesAtomic } from "../storage/fs/fs-safe.ts";
import { GitRunner, findGitExecutable, type GitProcessCounter } from "../storage/git/git-runner.ts";
import { cohortPaths, scopeFiles } from "../storage/layout.ts";
import { openStore } from "../storage/open-store.ts";

const ITERATIONS = 25;
const WARMUP = 3;
const SIZES = [8 * 1024, 128 * 1024];
const keys = {
  cwdKey: "--home-user-project--",
  sessionKey: "2026-09-07T20-01-08-993Z_0198f1c2-aaaa-7bbb-8ccc-123456789abc",
};
const paths = cohortPaths(keys);
const g = scopeFiles("global", keys);
const c = scopeFiles("cwd", keys);
const s = scopeFiles("session", keys);

const work = mkdtempSync(join(tmpdir(), "sf-bench-store-"));
const globalConfig = join(work, "gitconfig");
writeFileSync(globalConfig, "");
const env: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: globalConfig,
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@state-flow.invalid",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@state-flow.invalid",
};
for (const key of ["GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"]) delete env[key];
const gitBinary = findGitExecutable(env);
if (!gitBinary) throw new Error("bench:store needs git on PATH");

/** A plausible cohort of `size` total bytes: three scopes' checkpoint/patches/meta, changing with n. */
function cohortBytes(n: number, size: number): Map<string, Buffer> {
  const json = (tag: string, bytes: number) => {
    const head = `{"tag":"${tag}","n":${n},"data":"`;
    const body = `${tag}-${n}-`
      .repeat(Math.ceil(bytes / (tag.length + 4)))
      .slice(0, Math.max(0, bytes - head.length - 3));
    return Buffer.from(`${head}${body}"}\n`);
  };
  const share = (f: number) => Math.floor(size * f);
  return new Map([
    [s.checkpoint, json("sc", share(0.35))],
    [s.patches, json("sp", share(0.2))],
    [s.meta, json("sm", share(0.04))],
    [c.checkpoint, json("cc", share(0.2))],
    [c.patches, json("cp", share(0.1))],
    [c.meta, json("cm", share(0.03))],
    [g.checkpoint, json("gc", share(0.05))],
    [g.patches, json("gp", share(0.02))],
    [g.meta, json("gm", share(0.01))],
  ]);
}

const totalBytes = (m: Map<string, Buffer>) => [...m.values()].reduce((a, b) => a + b.length, 0);
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

function runGit(cwd: string, args: string[]): void {
  const r = spawnSync(gitBinary!, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
}

async function benchFile(size: number) {
  const root = join(work, `file-${size}`);
  const backend = new FileBackend(root, { generation: "bench" });
  // baseline: one writeFile + rename of the same bytes (interleaved with the measured cohorts)
  const baseDir = join(work, `file-base-${size}`);
  mkdirSync(baseDir, { recursive: true });
  const times: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    const basis = await backend.loadCurrent(paths);
    const writes = cohortBytes(i, size);
    const t = performance.now();
    await backend.publish({ basis, writes });
    const ms = performance.now() - t;
    const bytes = Buffer.concat([...writes.values()]);
    const tb = performance.now();
    writeFileSync(join(baseDir, "cohort.tmp"), bytes);
    renameSync(join(baseDir, "cohort.tmp"), join(baseDir, "cohort.json"));
    const baseMs = performance.now() - tb;
    if (i >= WARMUP) (times.push(ms), base.push(baseMs));
  }
  return { ms: median(times), baselineMs: median(base) };
}

/** Median wall time of each git command over the measured cohorts (from the runner's process log). */
function perProcess(log: NonNullable<GitProcessCounter["log"]>): Record<string, number> {
  const by = new Map<string, number[]>();
  for (const entry of log) {
    const args = entry.args[0] === "-c" ? entry.args.slice(2) : entry.args;
    const name = args[0] ?? "?";
    by.set(name, [...(by.get(name) ?? []), entry.ms]);
  }
  return Object.fromEntries([...by].map(([name, ms]) => [name, round(median(ms))]));
}

async function benchGit(size: number) {
  const root = join(work, `git-${size}`);
  const counter: GitProcessCounter = { count: 0 };
  const backend = (await openGitBackend({ root, binary: gitBinary!, env, counter, generation: "bench", init: true }))!;
  // baseline: same files written, then `git add -A` + `git commit` in a scratch repo (2 processes),
  // each baseline iteration right after the measured one
  const scratch = join(work, `git-base-${size}`);
  mkdirSync(scratch, { recursive: true });
  runGit(scratch, ["init", "-q"]);
  const times: number[] = [];
  const procs: number[] = [];
  const base: number[] = [];
  let log: GitProcessCounter["log"];
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    const basis = await backend.loadCurrent(paths); // not logged: only publication processes are
    const writes = cohortBytes(i, size);
    const before = counter.count;
    counter.log = i >= WARMUP ? (log ?? []) : undefined;
    const t = performance.now();
    await backend.publish({ basis, writes });
    const ms = performance.now() - t;
    log = counter.log;
    counter.log = undefined;
    const tb = performance.now();
    for (const [path, bytes] of writes) {
      mkdirSync(dirname(join(scratch, path)), { recursive: true });
      writeFileSync(join(scratch, path), bytes);
    }
    runGit(scratch, ["add", "-A"]);
    runGit(scratch, ["commit", "-q", "-m", `cohort ${i}`]);
    const baseMs = performance.now() - tb;
    if (i >= WARMUP) {
      times.push(ms);
      base.push(baseMs);
      procs.push(counter.count - before);
    }
  }
  // The live-file write alone (same-directory temp + write + fsync + rename + directory fsync).
  const liveDir = join(work, `live-${size}`);
  const live: number[] = [];
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    const t = performance.now();
    await writeOwnedFilesAtomic(liveDir, [...cohortBytes(i, size)]);
    if (i >= WARMUP) live.push(performance.now() - t);
  }
  return {
    ms: median(times),
    baselineMs: median(base),
    processes: Math.max(...procs),
    baselineProcesses: 2,
    perProcessMs: perProcess(log ?? []),
    liveWriteMs: median(live),
  };
}

/** A bare process spawn: `git --version` directly through node:child_process vs through simple-git (interleaved). */
async function benchSpawn() {
  const runner = new GitRunner({ cwd: work, env, binary: gitBinary! });
  const direct: number[] = [];
  const viaSimpleGit: number[] = [];
  const trueMs: number[] = [];
  for (let i = 0; i < WARMUP + 40; i++) {
    let t = performance.now();
    await runner.exec(["--version"]);
    const d = performance.now() - t;
    t = performance.now();
    await runner.run(["--version"]);
    const sg = performance.now() - t;
    t = performance.now();
    await new Promise((done) => spawn("true", { stdio: "ignore" }).on("close", done));
    const tr = performance.now() - t;
    if (i >= WARMUP) (direct.push(d), viaSimpleGit.push(sg), trueMs.push(tr));
  }
  return { directMs: median(direct), simpleGitMs: median(viaSimpleGit), trueMs: median(trueMs) };
}

/** A store with 1,000 committed cohorts (built with git fast-import for setup speed), then a cold load. */
async function benchLoad1000() {
  const root = join(work, "git-1000");
  mkdirSync(root, { recursive: true });
  runGit(root, ["init", "-q"]);
  const branch = spawnSync(gitBinary!, ["symbolic-ref", "HEAD"], { cwd: root, env, encoding: "utf8" }).stdout.trim();
  const chunks: Buffer[] = [];
  let last = new Map<string, Buffer>();
  for (let n = 1; n <= 1000; n++) {
    const files = cohortBytes(n, 8 * 1024);
    if (n % 3 !== 0) (files.delete(g.checkpoint), files.delete(g.patches)); // sparse global scope
    const msg = `cohort ${n}`;
    chunks.push(
      Buffer.from(
        `commit ${branch}\ncommitter Bench <bench@state-flow.invalid> ${1_700_000_000 + n} +0000\n` +
          `data ${msg.length}\n${msg}\n`,
      ),
    );
    for (const [path, bytes] of files) {
      chunks.push(Buffer.from(`M 100644 inline ${path}\ndata ${bytes.length}\n`), bytes, Buffer.from("\n"));
      last.set(path, bytes);
    }
    chunks.push(Buffer.from("\n"));
  }
  const fi = spawnSync(gitBinary!, ["fast-import", "--quiet"], {
    cwd: root,
    env,
    input: Buffer.concat(chunks),
    maxBuffer: 1 << 30,
  });
  if (fi.status !== 0) throw new Error(`fast-import: ${fi.stderr}`);
  runGit(root, ["reset", "-q", "--hard"]);
  last = new Map(last);
  const counter = { count: 0 };
  const t = performance.now();
  const store = await openStore({ root, env, counter });
  const view = await store.loadCurrent(paths);
  const ms = performance.now() - t;
  const loadProcesses = counter.count;
  for (const [path, bytes] of last)
    if (!view.files.get(path)?.equals(bytes)) throw new Error(`load mismatch at ${path}`);
  // historical read of the first cohort while the worktree holds the 1,000th
  const first = spawnSync(gitBinary!, ["rev-list", "--max-parents=0", "HEAD"], {
    cwd: root,
    env,
    encoding: "utf8",
  }).stdout.trim();
  const before = counter.count;
  const t2 = performance.now();
  await store.loadRevision({ revision: first }, paths);
  const revisionMs = performance.now() - t2;
  return { ms, processes: loadProcesses, revisionMs, revisionProcesses: counter.count - before };
}

const t0 = performance.now();
const results: Record<string, unknown> = {};
const breakdown: string[] = [];
const rows: string[][] = [["case", "payload", "median ms", "baseline ms", "ratio", "git procs", "baseline procs"]];
try {
  for (const size of SIZES) {
    const label = `${size / 1024}KiB`;
    const bytes = totalBytes(cohortBytes(1, size));
    const f = await benchFile(size);
    const fr = f.ms / f.baselineMs;
    rows.push([
      "file-only cohort",
      `${bytes} B`,
      `${round(f.ms)}`,
      `${round(f.baselineMs, 3)}`,
      `${round(fr)}×`,
      "0",
      "0",
    ]);
    const gi = await benchGit(size);
    const gr = gi.ms / gi.baselineMs;
    rows.push([
      "git cohort",
      `${bytes} B`,
      `${round(gi.ms)}`,
      `${round(gi.baselineMs)}`,
      `${round(gr)}×`,
      `${gi.processes}`,
      `${gi.baselineProcesses}`,
    ]);
    results[`file_${label}`] = {
      ms: round(f.ms, 3),
      baselineMs: round(f.baselineMs, 3),
      ratio: round(fr),
      processes: 0,
    };
    results[`git_${label}`] = {
      ms: round(gi.ms, 3),
      baselineMs: round(gi.baselineMs, 3),
      ratio: round(gr),
      processes: gi.processes,
      baselineProcesses: gi.baselineProcesses,
      processRatio: round(gi.processes / gi.baselineProcesses),
      perProcessMs: gi.perProcessMs,
      liveWriteMs: round(gi.liveWriteMs, 3),
    };
    breakdown.push(
      `git ${label}: per process ${Object.entries(gi.perProcessMs)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")} ms; live-file write alone (fsync) ${round(gi.liveWriteMs)} ms`,
    );
  }
  const spawnCost = await benchSpawn();
  results.spawn = {
    directMs: round(spawnCost.directMs, 3),
    simpleGitMs: round(spawnCost.simpleGitMs, 3),
    trueMs: round(spawnCost.trueMs, 3),
  };
  breakdown.push(
    `spawn: git --version direct ${round(spawnCost.directMs)} ms, ` +
      `via simple-git ${round(spawnCost.simpleGitMs)} ms; /bin/true ${round(spawnCost.trueMs)} ms`,
  );
  const load = await benchLoad1000();
  rows.push(["load current (1,000 commits)", "", `${round(load.ms)}`, "", "", `${load.processes}`, ""]);
  rows.push([
    "read revision #1 (1,000 commits)",
    "",
    `${round(load.revisionMs)}`,
    "",
    "",
    `${load.revisionProcesses}`,
    "",
  ]);
  results.load_1000 = {
    ms: round(load.ms, 3),
    processes: load.processes,
    revisionMs: round(load.revisionMs, 3),
    revisionProcesses: load.revisionProcesses,
  };
} finally {
  rmSync(work, { recursive: true, force: true });
}
results.iterations = ITERATIONS;
results.totalSeconds = round((performance.now() - t0) / 1000);
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  "));
for (const line of breakdown) console.log(line);
console.log(`BENCH ${JSON.stringify(results)}`);
