// Concurrent writers: several OS processes, each one real Pi session (faux model) of the same
// user, the same agent dir and the same project, patch the shared global and cwd scopes and
// their own session scopes at once (tests/fixtures/pi-writer-child.ts), file-only and with Git.
// Each patch is a read-modify-write of global `count`, so an update lost between two writers
// shows as a final count below the number of accepted patches. What must hold:
//   - every refusal a writer's model gets is named and true: another session did advance the
//     scope (its re-read shows a higher count), or a live writer held the lock; never "a
//     publisher was interrupted … checkout HEAD", which, followed, would clobber the other writer;
//   - nothing accepted is lost: every accepted patch and every run's response is in the final
//     state, and the accepted counts are exactly 1..total (one serial order, no duplicate, no gap);
//   - serial replay: the accepted cohorts applied in that order give the state every accepted
//     commit holds (Git) and the final state (both);
//   - Git: one commit per accepted cohort plus the documented non-semantic ones, a clean
//     `git fsck --full --strict` and `git status`, and nothing left behind by a publication.
// STATE_FLOW_WRITERS_PATCHES sets the runs per writer (one accepted patch each); the default is the
// full 100 (on 2 cores about 25 s file-only and 50 s with Git). The second run of the Pi-facing
// suite, on Pi 1.6 (npm run test:pi-1.6), sets 25, which still gets every kind of refusal often.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isDeepStrictEqual } from "node:util";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTemporalState } from "../../../storage/core/temporal.ts";
import { StateStore, decodeBranchState, type BranchState, type SessionIdentity } from "../../../storage/state-store.ts";
import { openStore } from "../../../storage/open-store.ts";
import { git, gitTestEnv } from "../../support/store-fixtures.ts";
import { PI_VERSION, piNodeArgs } from "../../support/pi-version.ts";

const WRITERS = 4;
const PATCHES = Number(process.env.STATE_FLOW_WRITERS_PATCHES ?? 100);
const TOTAL = WRITERS * PATCHES;
const WRITERS_TIMEOUT_MS = 10 * 60_000;
const child = resolve(dirname(fileURLToPath(import.meta.url)), "../../fixtures/pi-writer-child.ts");

type Mode = "file" | "git";

interface Line {
  event: string;
  writer: number;
  run?: number;
  count?: number;
  revision?: string;
  text?: string;
  basedOn?: number;
  reread?: number | null;
  pid?: number;
  episode?: string;
  identity?: SessionIdentity;
  level?: string;
  message?: string;
  [key: string]: unknown;
}

interface Writer {
  k: number;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  lines: Line[];
}

interface Run {
  root: string;
  store: string;
  mode: Mode;
  env: NodeJS.ProcessEnv;
  writers: Writer[];
  ms: number;
  /** Until every writer had started its session (process start, Pi, /state-flow-start). */
  readyMs: number;
}

/** Starts every writer; once each has started its session, lets them all run at once; waits for all. */
async function runWriters(mode: Mode): Promise<Run> {
  const root = mkdtempSync(join(tmpdir(), `sf-writers-${mode}-`));
  const env = { ...process.env };
  delete env.STATE_FLOW_KILL_AT;
  const started = performance.now();
  const ready: Promise<void>[] = [];
  const procs = Array.from({ length: WRITERS }, (_, k) => {
    const args = [...piNodeArgs, "--experimental-strip-types", "--disable-warning=ExperimentalWarning"];
    const proc = spawn(process.execPath, [...args, child, root, mode, String(k), String(PATCHES)], {
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const writer: Writer = { k, pid: proc.pid!, code: null, signal: null, stderr: "", lines: [] };
    let buffered = "";
    let isReady: () => void = () => undefined;
    ready.push(new Promise<void>((done) => (isReady = done)));
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      for (const part of parts) {
        if (!part.startsWith('{"event":')) continue;
        const line = JSON.parse(part) as Line;
        writer.lines.push(line);
        if (line.event === "ready") isReady();
      }
    });
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (writer.stderr += chunk));
    proc.stdin.on("error", () => undefined); // a writer that already exited cannot be told to go (EPIPE)
    const closed = new Promise<Writer>((done) =>
      proc.on("close", (code, signal) => {
        isReady(); // a writer that died before it was ready must not hold back the others
        done(Object.assign(writer, { code, signal }));
      }),
    );
    return { proc, closed };
  });
  const timer = setTimeout(() => procs.forEach(({ proc }) => proc.kill("SIGKILL")), WRITERS_TIMEOUT_MS - 30_000);
  try {
    await Promise.all(ready);
    const readyMs = Math.round(performance.now() - started);
    for (const { proc } of procs) proc.stdin.end("go\n");
    const writers = await Promise.all(procs.map(({ closed }) => closed));
    const ms = Math.round(performance.now() - started);
    const env = gitTestEnv(join(root, "gitconfig"));
    return { root, store: join(root, "agent/state-flow"), mode, env, writers, ms, readyMs };
  } finally {
    clearTimeout(timer);
  }
}

const of = (run: Run, event: string): Line[] => run.writers.flatMap((w) => w.lines.filter((l) => l.event === event));

/** Accepted patches in the one serial order their counts give. */
const acceptedInOrder = (run: Run): Line[] => of(run, "accepted").sort((a, b) => a.count! - b.count!);

const SHARED_SCOPE_ADVANCED = new RegExp(
  String.raw`^(?:global|cwd): the (global|cwd) scope advanced in another session since this branch read it; ` +
    String.raw`nothing was written\. `,
);
/** The lock error of fs/lock.ts, naming an owner that runs (its pid) or one that just released it. */
const LOCK_HELD = new RegExp(
  String.raw`^The State Flow publication lock \S+ is held by ` +
    String.raw`(?:pid (\d+) on \S+ since \S+ \(generation [^,]+, [^;)]+; that process is still running\)` +
    String.raw`|an owner that released it while we looked)\. Nothing was written\.`,
);

/**
 * Why a refusal is not one of the named, true reasons; null when it is. True means: the scope
 * it names did advance (the re-read it promises shows a higher count: every patch cohort moves
 * global and cwd together), or the lock it names was held by one of the live writers.
 */
function untrue(refusal: Line, pids: ReadonlySet<number>): string | null {
  const text = refusal.text ?? "";
  if (SHARED_SCOPE_ADVANCED.test(text)) {
    if (refusal.reread === null || refusal.reread === undefined) return "no read_state followed it";
    return refusal.reread > refusal.basedOn! ? null : `re-read count ${refusal.reread} ≤ ${refusal.basedOn}`;
  }
  const lock = LOCK_HELD.exec(text);
  if (lock) return lock[1] === undefined || pids.has(Number(lock[1])) ? null : `pid ${lock[1]} is not a writer`;
  return "not a named refusal";
}

function refusalReason(text: string): string {
  if (SHARED_SCOPE_ADVANCED.test(text)) return `shared-scope-advanced (${SHARED_SCOPE_ADVANCED.exec(text)![1]})`;
  if (LOCK_HELD.test(text)) return "lock-held";
  return text.split(". ")[0]!.slice(0, 100);
}

/**
 * Every writer's runtime as a fresh process reads the live store: its own session layer over the
 * shared scopes as the others left them (adopted as a restore adopts them).
 */
async function liveRuntimes(run: Run): Promise<BranchState[]> {
  const env = run.mode === "git" ? run.env : { ...run.env, PATH: join(run.root, "no-git-bin") };
  const store = await openStore({ root: run.store, env });
  return Promise.all(
    run.writers.map(async (w) => {
      const snapshot = await new StateStore(store, identityOf(w)).loadCurrentSnapshot();
      return decodeBranchState(snapshot, identityOf(w), { liveShared: true })!;
    }),
  );
}

function identityOf(w: Writer): SessionIdentity {
  return w.lines.find((l) => l.event === "ready")!.identity!;
}

type Working = Record<string, unknown>;
const working = (runtime: BranchState, scope: "global" | "cwd" | "session"): Working =>
  readTemporalState(runtime.view, 0, scope).state.working as Working;

/** The shared scopes' `working` after the accepted patches up to `upTo` (in serial order), replayed. */
function replay(accepted: readonly Line[], upTo = accepted.length): { global: Working; cwd: Working } {
  const global: Working = {};
  const cwd: Working = {};
  for (const line of accepted.slice(0, upTo)) {
    Object.assign(global, { count: line.count, [`last_${line.writer}`]: line.run });
    cwd[`w${line.writer}`] = line.run;
  }
  return { global, cwd };
}

/** Files a publication leaves only while it runs (or when it was killed). */
function leftovers(store: string): string[] {
  return readdirSync(store, { recursive: true, encoding: "utf8" }).filter(
    (p) =>
      /\.sf-\d+-[0-9a-f]+\.tmp$/.test(p) ||
      /state-flow-publication\.(lock|journal|journal\.\d+\.tmp)$/.test(p) ||
      /^\.git\/(state-flow-index\.|index\.lock$|HEAD\.lock$|refs\/heads\/.*\.lock$)/.test(p),
  );
}

for (const mode of ["file", "git"] as const) {
  describe(`${WRITERS} Pi processes × ${PATCHES} patches on one ${mode === "git" ? "Git" : "file-only"} store`, () => {
    let run: Run;
    beforeAll(async () => {
      run = await runWriters(mode);
      const refused = of(run, "refused");
      const reasons: Record<string, number> = {};
      for (const r of refused) reasons[refusalReason(r.text!)] = (reasons[refusalReason(r.text!)] ?? 0) + 1;
      const accepted = of(run, "accepted").length;
      const timing = `${run.ms} ms (${run.readyMs} ms until every session had started)`;
      const startRetries = of(run, "ready").reduce((n, l) => n + Number(l["startRetries"] ?? 0), 0);
      console.log(`${mode}: ${WRITERS}×${PATCHES} in ${timing}; accepted ${accepted}; refused`, reasons, {
        startsRetriedAfterLockHeld: startRetries,
      });
    }, WRITERS_TIMEOUT_MS);
    afterAll(() => {
      if (run) rmSync(run.root, { recursive: true, force: true });
    });

    it("every writer starts its session, completes every run and exits cleanly", () => {
      // One list, so that a failure shows everything that went wrong (and the notices saying why).
      const problems: string[] = [];
      for (const w of run.writers) {
        const summary = w.lines.find((l) => l.event === "summary");
        const ready = w.lines.find((l) => l.event === "ready");
        if (!/^active\./.test(ready?.episode ?? "")) {
          const said = ((ready?.["notices"] ?? []) as { message: string }[]).map((n) => n.message);
          problems.push(`writer ${w.k} started as ${ready?.episode}: ${JSON.stringify(said)}`);
        }
        if (ready && ready["pi"] !== PI_VERSION)
          problems.push(`writer ${w.k} ran Pi ${ready["pi"]}, not ${PI_VERSION}`);
        if (w.code !== 0 || w.signal !== null || !summary)
          problems.push(`writer ${w.k} exited ${w.code ?? w.signal}: ${w.stderr.slice(-2000)}`);
        else if (summary["accepted"] !== PATCHES || summary["gaveUp"] !== 0)
          problems.push(`writer ${w.k}: ${JSON.stringify(summary)}`);
      }
      for (const line of [...of(run, "uncommitted"), ...of(run, "read-refused"), ...of(run, "notice")]) {
        const { event, writer, ...rest } = line;
        problems.push(`writer ${writer} ${event}: ${JSON.stringify(rest)}`);
      }
      expect(problems, "every run's answer became its session.response; no warning or error").toEqual([]);
    });

    it("every refusal is named and true; none says a publisher was interrupted", () => {
      const refused = of(run, "refused");
      const interrupted = refused.filter((r) =>
        /publisher was interrupted|checkout HEAD|no longer running/.test(r.text!),
      );
      expect(
        interrupted.map((r) => `writer ${r.writer} run ${r.run}: ${r.text}`),
        "two live writers are never told that a publisher was interrupted",
      ).toEqual([]);
      const pids = new Set(run.writers.map((w) => w.pid));
      const wrong = refused.flatMap((r) => {
        const why = untrue(r, pids);
        return why ? [`writer ${r.writer} run ${r.run} (${why}): ${r.text}`] : [];
      });
      expect(wrong).toEqual([]);
    });

    it("zero lost: every accepted patch and response is in the final state", async () => {
      expect(of(run, "accepted")).toHaveLength(TOTAL);
      for (const w of run.writers) {
        const runs = w.lines.filter((l) => l.event === "accepted").map((l) => l.run);
        expect(runs, `writer ${w.k}: one accepted patch per run`).toEqual(
          Array.from({ length: PATCHES }, (_, i) => i + 1),
        );
      }
      const runtimes = await liveRuntimes(run);
      const global = working(runtimes[0]!, "global");
      expect(global.count, "the read-modify-write count lost no update").toBe(TOTAL);
      runtimes.forEach((runtime, k) => {
        expect(working(runtime, "global"), "every session sees the same global scope").toEqual(global);
        expect(working(runtime, "cwd")[`w${k}`]).toBe(PATCHES);
        expect(global[`last_${k}`]).toBe(PATCHES);
        expect(readTemporalState(runtime.view, 0, "session").state).toMatchObject({
          working: { n: PATCHES },
          response: `w${k} answer ${PATCHES}`,
        });
        // Each run is two cohorts of this session: its patch and its response.
        expect(runtime.meta.counters).toEqual({ transitions: 2 * PATCHES, runs: PATCHES });
      });
    });

    it("serial replay: the accepted counts are exactly 1..total and replay to the final state", async () => {
      const accepted = acceptedInOrder(run);
      expect(accepted.map((l) => l.count)).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));
      const runtimes = await liveRuntimes(run);
      expect({ global: working(runtimes[0]!, "global"), cwd: working(runtimes[0]!, "cwd") }).toEqual(replay(accepted));
    });

    if (mode === "git") {
      it("serial replay: commit order = count order, and every patch commit holds the replayed state", async () => {
        const accepted = acceptedInOrder(run);
        const commits = git(run.store, run.env, "rev-list", "--reverse", "HEAD").trim().split("\n");
        const position = new Map(commits.map((c, i) => [c, i]));
        const positions = accepted.map((l) => position.get(l.revision!) ?? -1);
        expect(
          positions.filter((p) => p < 0),
          "every accepted revision is a commit of the branch",
        ).toEqual([]);
        expect(positions, "commit order = count order").toEqual([...positions].sort((a, b) => a - b));
        const store = await openStore({ root: run.store, env: run.env });
        const stores = run.writers.map((w) => new StateStore(store, identityOf(w)));
        const mismatches: string[] = [];
        for (let i = 0; i < accepted.length; i++) {
          const line = accepted[i]!;
          const runtime = await stores[line.writer]!.loadPointer({ revision: line.revision! });
          const held = { global: working(runtime, "global"), cwd: working(runtime, "cwd") };
          const expected = replay(accepted, i + 1);
          const session = working(runtime, "session").n;
          if (!isDeepStrictEqual(held, expected) || session !== line.run)
            mismatches.push(`count ${line.count} at ${line.revision}: ${JSON.stringify({ held, session })}`);
        }
        expect(mismatches).toEqual([]);
      });

      it("one commit per accepted cohort plus one start commit per session, and nothing else", () => {
        // The commits the writers make, by message (runtime/flow-runtime.ts, storage/state-store.ts):
        //   "state-flow: start session <key>"         /state-flow-start: the session's empty layer and
        //                                              config (and the scope meta files the first one
        //                                              finds missing); non-semantic, one per session;
        //   "state-flow: patch_state global+cwd+session" one per accepted patch_state cohort;
        //   "state-flow: response"                     one per accepted run (its answer as session.response).
        // None of the others can occur here: a stop, a restart, adoption into Git, a legacy
        // migration or Skill migration, a knowledge removal.
        const log = git(run.store, run.env, "log", "--format=%H %s").trim().split("\n");
        const subjects = log.map((l) => l.slice(41).replace(/^state-flow: start session .*$/, "start"));
        const counts: Record<string, number> = {};
        for (const s of subjects) counts[s] = (counts[s] ?? 0) + 1;
        expect(counts).toEqual({
          start: WRITERS,
          "state-flow: patch_state global+cwd+session": TOTAL,
          "state-flow: response": TOTAL,
        });
        expect(log).toHaveLength(WRITERS + of(run, "accepted").length + TOTAL);
        const acceptedRevisions = new Set(of(run, "accepted").map((l) => l.revision));
        const patchCommits = log.filter((l) => l.endsWith(" state-flow: patch_state global+cwd+session"));
        expect(
          patchCommits.filter((l) => !acceptedRevisions.has(l.slice(0, 40))),
          "no patch commit whose tool result was a refusal",
        ).toEqual([]);
      });

      it("git fsck --full --strict is clean, git status is empty and no publication left anything", () => {
        git(run.store, run.env, "fsck", "--full", "--strict", "--no-progress");
        expect(git(run.store, run.env, "status", "--porcelain", "--untracked-files=all")).toBe("");
        expect(leftovers(run.store)).toEqual([]);
      });
    } else {
      it("no publication left a lock, a journal or a temp copy", () => {
        expect(existsSync(join(run.store, ".git"))).toBe(false);
        expect(leftovers(run.store)).toEqual([]);
      });
    }
  });
}
