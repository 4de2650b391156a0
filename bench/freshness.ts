// npm run bench:freshness — what a run's shared-state check costs (issue 28: every run starts from
// the newest shared state), in file-only and Git mode, as ratios to baselines measured in the same
// run, interleaved (medians):
//
//   nothing moved:  the check (StateStore.liveMoves: each scope's meta.json read and compared)
//                   against reading the same three files with a plain readFileSync;
//   another session moved cwd: the check plus the adoption (StateStore.refresh and the diff the
//                   runtime context shows) against one accepted cohort of this session (a patch).
//
// It also counts the git processes each path starts (the check itself must start none). Prints a
// table and ends with one line `BENCH {json}`. Never asserts timings.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { sharedMoves } from "../storage/core/shared-moves.ts";
import type { GitProcessCounter } from "../storage/git/git-runner.ts";
import { cwdKey, scopeFiles } from "../storage/layout.ts";
import { openStore } from "../storage/open-store.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../storage/state-store.ts";

const ITERATIONS = 40;
const WARMUP = 5;
const work = mkdtempSync(join(tmpdir(), "sf-bench-fresh-"));
const gitConfig = join(work, "gitconfig");
writeFileSync(gitConfig, "[user]\n\tname = Bench\n\temail = bench@state-flow.invalid\n");

const identity = (sessionId: string): SessionIdentity => ({
  cwd: "/home/user/project",
  cwdKey: cwdKey("/home/user/project"),
  sessionId,
  sessionKey: `2026-12-03T10-00-00-000Z_${sessionId}`,
});
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = async (work: () => unknown): Promise<number> => {
  const start = performance.now();
  await work();
  return performance.now() - start;
};

async function measure(kind: "git" | "file") {
  const root = join(work, kind);
  const env: NodeJS.ProcessEnv =
    kind === "git"
      ? { ...process.env, GIT_CONFIG_GLOBAL: gitConfig, GIT_CONFIG_NOSYSTEM: "1" }
      : { ...process.env, PATH: join(work, "no-git") };
  const counter: GitProcessCounter = { count: 0 };
  const open = async (id: SessionIdentity) =>
    new StateStore(await openStore({ root, env, initGit: kind === "git", counter }), id);
  const a = await open(identity("0198f1c2-aaaa-7bbb-8ccc-00000000000a"));
  const b = await open(identity("0198f1c2-aaaa-7bbb-8ccc-00000000000b"));
  const note = "x".repeat(8 * 1024); // an 8 KiB state, as the cost bench's
  let stateA: BranchState = (await a.commit(await a.start(null, "off"), { session: { working: { note } } }, "a"))
    .runtime;
  let stateB: BranchState = await b.start(null, "off");
  const metas = ["session", "global", "cwd"].map((scope) => join(root, scopeFiles(scope as never, a.identity).meta));

  const rows = { unchanged: [] as number[], plainRead: [] as number[], adopt: [] as number[], commit: [] as number[] };
  const processes = { unchanged: 0, adopt: 0 };
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    const keep = i >= WARMUP;
    let before = counter.count;
    const unchanged = await time(() => {
      if (a.liveMoves(stateA).shared.length !== 0) throw new Error("nothing moved, yet the check says it did");
    });
    if (keep) processes.unchanged += counter.count - before;
    const plain = await time(() => metas.map((path) => readFileSync(path, { flag: "r" }).length));
    stateB = (await b.commit(stateB, { cwd: { contract: { [`k${i % 4}`]: i } } }, "b")).runtime;
    before = counter.count;
    const adopt = await time(async () => {
      if (a.liveMoves(stateA).shared.length === 0) throw new Error("cwd moved, yet the check saw nothing");
      const next = await a.refresh(stateA);
      if (sharedMoves(stateA.view, next.view).length !== 1) throw new Error("the adoption found no move");
      stateA = next;
    });
    if (keep) processes.adopt += counter.count - before;
    const commit = await time(async () => {
      stateA = (await a.commit(stateA, { session: { working: { n: i } } }, "a")).runtime;
    });
    if (!keep) continue;
    rows.unchanged.push(unchanged);
    rows.plainRead.push(plain);
    rows.adopt.push(adopt);
    rows.commit.push(commit);
  }
  return {
    kind,
    unchangedMs: median(rows.unchanged),
    plainReadMs: median(rows.plainRead),
    adoptMs: median(rows.adopt),
    commitMs: median(rows.commit),
    gitProcessesPerCheck: processes.unchanged / ITERATIONS,
    gitProcessesPerAdoption: processes.adopt / ITERATIONS,
  };
}

try {
  const results = [await measure("file"), await measure("git")];
  const f = (ms: number) => `${ms.toFixed(3)} ms`;
  console.log(
    "mode      | check, nothing moved | plain read of 3 files | ratio | adopt a cwd move | one patch | ratio",
  );
  for (const r of results) {
    console.log(
      `${r.kind.padEnd(9)} | ${f(r.unchangedMs).padEnd(20)} | ${f(r.plainReadMs).padEnd(21)} | ` +
        `${(r.unchangedMs / r.plainReadMs).toFixed(2)} | ${f(r.adoptMs).padEnd(16)} | ${f(r.commitMs).padEnd(9)} | ` +
        `${(r.adoptMs / r.commitMs).toFixed(2)}`,
    );
    console.log(
      `          git processes: ${r.gitProcessesPerCheck} per check, ${r.gitProcessesPerAdoption} per adoption`,
    );
  }
  console.log(`BENCH ${JSON.stringify(results)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
