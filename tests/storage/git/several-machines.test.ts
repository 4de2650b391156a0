// Several machines, one bare remote, real stores: each machine accepts State Flow transitions on
// global, cwd and its own session, then syncs the way the runtime does (fetch, classify; ahead:
// push; behind: fast-forward; diverged: join scope by scope, a scope both changed settled by a side
// chosen at random, as a person would with /state-flow-sync). Between them the user runs their own
// git commands in the stores. At the end every machine holds the same branch and the same state; no
// machine lost one of its own session transitions; every shared scope holds a value one machine
// wrote, whole (its checkpoint/patches pair proven by its meta record); every divergence was named
// and every named recovery worked.
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { readTemporalState } from "../../../storage/core/temporal.ts";
import { cwdKey } from "../../../storage/layout.ts";
import { openStore, type Store } from "../../../storage/open-store.ts";
import { StateStore, type BranchState } from "../../../storage/state-store.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterAll(() => temps.cleanup());

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
  const home = temps.make(`sf-machines-${name}-`);
  writeFileSync(join(home, "gitconfig"), `[user]\n\tname = ${name}\n\temail = ${name}@machines.invalid\n`);
  const env = gitTestEnv(join(home, "gitconfig"));
  const root = join(home, "state-flow");
  if (!first) git(home, env, "clone", "-q", bare, root);
  const store = await openStore({ root, env, initGit: true });
  if (first) git(root, env, "remote", "add", "origin", bare);
  return { name, root, env, store, state: new StateStore(store, identityOf(name)), own: [], runtime: null };
}

/** The session's state at a run's start: started once, then refreshed (another machine's changes adopted). */
async function current(m: Machine): Promise<BranchState> {
  m.runtime = m.runtime ? await m.state.refresh(m.runtime) : await m.state.start(null, "turn-end");
  return m.runtime;
}

interface Tally {
  pushes: number;
  fastForwards: number;
  joins: number;
  divergences: number;
  conflicts: number;
  recoveries: number;
}

/** One sync as the runtime runs it; a conflict is settled by the side `pick` chooses (the person). */
async function sync(m: Machine, pick: () => "local" | "remote", tally: Tally): Promise<string> {
  const port = m.store.publication!;
  const standing = await port.sync.standing(await port.remote.fetchBranch());
  switch (standing.kind) {
    case "equal":
      return "equal";
    case "ahead": {
      const pushed = await port.remote.pushRevision(standing.local);
      if (pushed.kind === "pushed") tally.pushes++;
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
        expect(String(refused)).toMatch(/changed on this machine and on the remote.*keep-local.*take-remote/s);
        expect(git(m.root, m.env, "rev-parse", "HEAD").trim()).toBe(standing.local);
        tally.recoveries++;
      }
      await port.sync.join(standing, plan, choices);
      tally.joins++;
      return "diverged";
    }
    default:
      throw new Error(`${m.name}: unexpected standing ${standing.kind}`);
  }
}

describe("several machines on one remote", () => {
  it(`${MACHINES} machines × ${TRANSITIONS} transitions on global, cwd and their sessions converge`, async () => {
    const seed = Number(process.env.STATE_FLOW_MACHINES_SEED ?? 31);
    const rnd = random(seed);
    const bare = temps.make("sf-machines-bare-");
    git(bare, process.env, "init", "-q", "--bare");
    const first = await machine("m0", bare, true);
    await current(first);
    await sync(first, () => "local", {
      pushes: 0,
      fastForwards: 0,
      joins: 0,
      divergences: 0,
      conflicts: 0,
      recoveries: 0,
    });
    const machines = [first];
    for (let i = 1; i < MACHINES; i++) machines.push(await machine(`m${i}`, bare, false));
    const tally: Tally = { pushes: 0, fastForwards: 0, joins: 0, divergences: 0, conflicts: 0, recoveries: 0 };
    const written = { global: new Set<string>(), cwd: new Set<string>() };
    const pick = (): "local" | "remote" => (rnd() < 0.5 ? "local" : "remote");
    let n = 0;
    for (let k = 0; k < TRANSITIONS * MACHINES; k++) {
      const m = machines[k % MACHINES]!;
      const scope = rnd() < 0.5 ? "global" : "cwd";
      const value = `${m.name}-${++n}`;
      written[scope].add(value);
      m.own.push(n);
      const runtime = await current(m);
      const patches = { [scope]: { working: { v: value } }, session: { working: { own: [...m.own] } } };
      m.runtime = (await m.state.commit(runtime, patches, value)).runtime;
      // The user's own git in the store, now and then: it must change nothing State Flow relies on.
      if (rnd() < 0.1) git(m.root, m.env, "gc", "-q", "--auto");
      if (rnd() < 0.1) git(m.root, m.env, "fetch", "-q", "origin");
      if (rnd() < 0.6) await sync(m, pick, tally);
    }
    // Every machine syncs until all are equal (a round robin; each round can only bring lines together).
    for (let round = 0; round < 4; round++) for (const m of machines) await sync(m, pick, tally);
    const heads = machines.map((m) => git(m.root, m.env, "rev-parse", "HEAD").trim());
    expect(new Set(heads).size, `seed ${seed}`).toBe(1);
    const states = await Promise.all(machines.map(current));
    const view = (s: BranchState, scope: "global" | "cwd") => readTemporalState(s.view, 0, scope).state.working.v;
    for (const scope of ["global", "cwd"] as const) {
      const values = states.map((s) => view(s, scope));
      expect(new Set(values).size).toBe(1);
      expect(written[scope].has(String(values[0]))).toBe(true);
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
    console.log(`[machines] seed ${seed}: ${MACHINES}×${TRANSITIONS} transitions, ${JSON.stringify(tally)}`);
  }, 300_000);
});
