// Several machines, one bare remote, real stores: each machine accepts State Flow transitions on
// global, cwd and its own session, then syncs the way the runtime does (fetch, classify; ahead:
// push; behind: fast-forward; diverged: join scope by scope, a scope both changed settled by a choice
// made at random — keep-local, take-remote or re-apply —, as a person would with /state-flow-sync).
// Between them the user runs their own git commands in the stores. At the end every machine holds
// the same branch and the same state; no machine lost one of its own session transitions; every
// shared scope holds values machines wrote, whole (its checkpoint/patches pair proven by its meta
// record); every divergence was named and every named recovery worked. Some syncs run in a child
// process killed with SIGKILL at a random moment (during the fetch, the fast-forward, the join or the
// push); the next sync recovers by doing what the refusal it meets says. A second run settles every
// conflict by re-applying: then nothing is dropped by a choice, and the shared state every machine
// ends with is the serial replay of every accepted transition.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { readTemporalState } from "../../../storage/core/temporal.ts";
import { KILL_POINTS } from "../../../storage/fs/crash-points.ts";
import { cwdKey } from "../../../storage/layout.ts";
import type { Store } from "../../../storage/open-store.ts";
import { StateStore, type BranchState } from "../../../storage/state-store.ts";
import { TempDirs, git } from "../../support/store-fixtures.ts";
import { machineStore } from "../../support/sync-machines.ts";

const temps = new TempDirs();
afterAll(() => temps.cleanup());

const syncChild = resolve(dirname(fileURLToPath(import.meta.url)), "../../fixtures/sync-child.ts");
const POINTS = KILL_POINTS.filter((point) => !point.startsWith("branch."));
const MACHINES = 3;
const TRANSITIONS = Number(process.env.STATE_FLOW_MACHINES_TRANSITIONS ?? 50);

/** A small deterministic PRNG (mulberry32): a failure names its seed and replays. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Machine {
  name: string;
  root: string;
  env: NodeJS.ProcessEnv;
  store: Store;
  state: StateStore;
  /** This machine's own session transitions, in order (never lost). */
  own: number[];
  /** The session's bound state, refreshed as the runtime does at a run's start (shared changes adopted). */
  runtime: BranchState | null;
}

const CWD = "/work/project";
const identityOf = (name: string) => ({
  cwd: CWD,
  cwdKey: cwdKey(CWD),
  sessionId: name,
  sessionKey: `2026-12-06T00-00-00-000Z_${name}`,
});

async function machine(name: string, bare: string, first: boolean): Promise<Machine> {
  const { root, env, store } = await machineStore(temps, name, bare, first);
  return { name, root, env, store, state: new StateStore(store, identityOf(name)), own: [], runtime: null };
}

/** The session's state at a run's start: started once, then refreshed (another machine's changes adopted). */
async function current(m: Machine): Promise<BranchState> {
  m.runtime = m.runtime ? await m.state.refresh(m.runtime) : await m.state.start(null, "turn-end");
  return m.runtime;
}

type Choice = "local" | "remote" | "reapply";

interface Tally {
  kills: number;
  remedies: number;
  pushes: number;
  fastForwards: number;
  joins: number;
  divergences: number;
  conflicts: number;
  recoveries: number;
}

/**
 * A sync in a child process SIGKILLed after `ms` (if still running); then the in-process sync, which
 * follows what a refusal says: a publication lock or a git lock left by the killed process is removed.
 */
async function killedSync(
  m: Machine,
  kill: { ms: number } | { at: string },
  pick: () => Choice,
  tally: Tally,
): Promise<void> {
  const run = spawnSync(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", syncChild, m.root],
    {
      env: { ...m.env, PATH: process.env.PATH, ...("at" in kill ? { STATE_FLOW_KILL_AT: `${kill.at}#1` } : {}) },
      encoding: "utf8",
      ...("ms" in kill ? { timeout: kill.ms, killSignal: "SIGKILL" as const } : {}),
    },
  );
  if (run.signal === "SIGKILL") tally.kills++;
  await withRemedy(() => sync(m, pick, tally), tally);
}

/**
 * Runs `work`, doing what a refusal says when a killed process left a lock behind (State Flow's
 * publication lock of a process that is gone, or git's own `.lock`), then running it again.
 */
async function withRemedy<T>(work: () => Promise<T>, tally: Tally): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const text = String(error);
      if (attempt > 3) throw error;
      // A git a killed process left running still updates the tracking ref: what git says, "try again", works.
      if (/cannot lock ref .* but expected/.test(text)) {
        await new Promise((done) => setTimeout(done, 500));
        continue;
      }
      const lock = /Remove (\S+) and retry/.exec(text)?.[1] ?? /Unable to create '([^']+\.lock)'/.exec(text)?.[1];
      if (!lock) throw error;
      rmSync(lock, { force: true });
      tally.remedies++;
    }
  }
}

/** One sync as the runtime runs it; a conflict is settled by the side `pick` chooses (the person). */
async function sync(m: Machine, pick: () => Choice, tally: Tally): Promise<string> {
  const port = m.store.publication!;
  const standing = await port.sync.standing(await port.remote.fetchBranch());
  switch (standing.kind) {
    case "equal":
      return "equal";
    case "ahead": {
      const pushed = await port.remote.pushRevision(standing.local);
      if (pushed.kind === "pushed") tally.pushes++;
      // (a push killed mid-way can leave the remote's own ref lock: git's words say which)
      if (pushed.kind === "failed") throw new Error(`${m.name}: the push failed: ${pushed.detail}`);
      return pushed.kind;
    }
    case "behind":
      await port.sync.fastForward(standing.local!, standing.remoteHead, standing.remote);
      tally.fastForwards++;
      return "behind";
    case "diverged": {
      tally.divergences++;
      const plan = await port.sync.plan(standing.local, standing.remoteHead, standing.base);
      const choices = new Map(plan.conflicts.map((c) => [c.scope, pick()] as const));
      if (plan.conflicts.length > 0) {
        tally.conflicts++;
        // Named with the state paths each side changed (both wrote working.v there).
        for (const c of plan.conflicts.filter((c) => c.scope === "global" || c.scope.startsWith("cwd "))) {
          expect(c.localChanges).toContain("working.v");
          expect(c.remoteChanges).toContain("working.v");
        }
        // Named: joining without a side is refused and writes nothing; choosing one (the advice) works.
        const refused = await port.sync.join(standing, plan, new Map()).catch((e: Error) => e);
        expect(refused).toBeInstanceOf(Error);
        expect(String(refused)).toMatch(
          /changed on this machine and on the remote.*keep-local.*take-remote.*re-apply/s,
        );
        expect(git(m.root, m.env, "rev-parse", "HEAD").trim()).toBe(standing.local);
        tally.recoveries++;
      }
      await port.sync.join(standing, plan, choices);
      tally.joins++;
      return "diverged";
    }
    case "unreachable":
      // (a fetch killed mid-way can leave git's lock on the tracking ref: git's words say which)
      throw new Error(`${m.name}: the remote could not be fetched: ${standing.detail}`);
    default:
      throw new Error(`${m.name}: unexpected standing ${standing.kind}`);
  }
}

const RUNS = [
  { name: "sides chosen at random, syncs killed", transitions: TRANSITIONS, kills: true, pick: "random" },
  { name: "every conflict re-applied: a serial replay", transitions: 20, kills: false, pick: "reapply" },
] as const;

describe("several machines on one remote", () => {
  it.each(RUNS)(
    `${MACHINES} machines × $transitions transitions on global, cwd and sessions converge: $name`,
    async (run) => {
      const seed = Number(process.env.STATE_FLOW_MACHINES_SEED ?? 31);
      const rnd = random(seed);
      const bare = temps.make("sf-machines-bare-");
      git(bare, process.env, "init", "-q", "--bare");
      const first = await machine("m0", bare, true);
      await current(first);
      const tally: Tally = {
        kills: 0,
        remedies: 0,
        pushes: 0,
        fastForwards: 0,
        joins: 0,
        divergences: 0,
        conflicts: 0,
        recoveries: 0,
      };
      await sync(first, () => "local", tally); // the first push: the remote's branch starts here
      tally.pushes = 0;
      const machines = [first];
      for (let i = 1; i < MACHINES; i++) machines.push(await machine(`m${i}`, bare, false));
      const written = { global: new Set<string>(), cwd: new Set<string>() };
      const sides = ["local", "remote", "reapply"] as const;
      const pick = (): Choice => (run.pick === "reapply" ? "reapply" : sides[Math.floor(rnd() * 3)]!);
      // Each machine's newest value per shared scope: what a serial replay of every transition ends with.
      const newest = { global: new Map<string, number>(), cwd: new Map<string, number>() };
      let n = 0;
      for (let k = 0; k < run.transitions * MACHINES; k++) {
        const m = machines[k % MACHINES]!;
        const scope = rnd() < 0.5 ? "global" : "cwd";
        const value = `${m.name}-${++n}`;
        written[scope].add(value);
        newest[scope].set(m.name, n);
        m.own.push(n);

        const shared = { working: { v: value, [m.name]: n } };
        const patches = { [scope]: shared, session: { working: { own: [...m.own] } } };
        // (a remedy followed, the session reads the store again, as its next run would)
        m.runtime = (await withRemedy(async () => m.state.commit(await current(m), patches, value), tally)).runtime;
        // The user's own git in the store, now and then: it must change nothing State Flow relies on.
        if (rnd() < 0.1) git(m.root, m.env, "gc", "-q", "--auto");
        if (rnd() < 0.1) git(m.root, m.env, "fetch", "-q", "origin");
        const r = rnd();
        // Killed at a random moment (mostly the fetch), or at a random write step of the fast-forward or join.
        const point = POINTS[Math.floor(rnd() * POINTS.length)]!;
        if (run.kills && r < 0.08) await killedSync(m, { ms: 50 + Math.floor(rnd() * 400) }, pick, tally);
        else if (run.kills && r < 0.16) await killedSync(m, { at: point }, pick, tally);
        else if (r < 0.6) await withRemedy(() => sync(m, pick, tally), tally);
      }
      // Every machine syncs until all are equal (a round robin; each round can only bring lines together).
      for (let round = 0; round < 4; round++)
        for (const m of machines) await withRemedy(() => sync(m, pick, tally), tally);
      const heads = machines.map((m) => git(m.root, m.env, "rev-parse", "HEAD").trim());
      expect(new Set(heads).size, `seed ${seed}`).toBe(1);
      const states = await Promise.all(machines.map(current));
      const view = (s: BranchState, scope: "global" | "cwd") => readTemporalState(s.view, 0, scope).state.working;
      for (const scope of ["global", "cwd"] as const) {
        const values = states.map((s) => JSON.stringify(view(s, scope)));
        expect(new Set(values).size).toBe(1);
        const { v, ...byMachine } = view(states[0]!, scope);
        expect(written[scope].has(String(v))).toBe(true);
        // Each machine's key holds a value it wrote there; with every conflict re-applied, its newest (none dropped).
        for (const [name, value] of Object.entries(byMachine))
          expect(written[scope].has(`${name}-${value}`)).toBe(true);
        if (run.pick === "reapply")
          expect(byMachine, `${scope}, seed ${seed}`).toEqual(Object.fromEntries(newest[scope]));
      }
      // Nothing lost: every store holds each machine's session, byte for byte, with all its transitions.
      for (const m of machines) {
        expect(readTemporalState(states[machines.indexOf(m)]!.view, 0, "session").state.working.own).toEqual(m.own);
        const folder = join(cwdKey(CWD), identityOf(m.name).sessionKey);
        for (const file of ["checkpoint.json", "patches.jsonl", "meta.json"]) {
          const bytes = await Promise.all(machines.map((other) => other.store.readFile(join(folder, file))));
          expect(new Set(bytes.map((b) => b?.toString("base64"))).size, `${folder}/${file}`).toBe(1);
        }
      }
      for (const m of machines) {
        expect(git(m.root, m.env, "status", "--porcelain")).toBe("");
        git(m.root, m.env, "fsck", "--strict", "--no-dangling", "--no-progress");
      }
      expect(tally.divergences).toBeGreaterThan(0);
      expect(tally.conflicts).toBeGreaterThan(0);
      expect(tally.recoveries).toBe(tally.conflicts);
      if (run.kills) expect(tally.kills).toBeGreaterThan(0);
      console.log(`[machines] ${run.name}, seed ${seed}: ${MACHINES}×${run.transitions}, ${JSON.stringify(tally)}`);
    },
    300_000,
  );
});
