// Re-applying this machine's transitions of a scope both machines changed, on top of the remote's
// state, with real stores (StateStore over a Git store each) and a bare remote: the transitions
// become new ones after the remote's (a stream that parses, proven by its meta record, adopted by
// the session at its next run and by the other machine through a fast-forward); one the remote
// already holds adds nothing; one the remote's state refuses refuses the whole choice, writes
// nothing, and the two sides it names instead work; a session scope is not re-applied.
import { afterAll, describe, expect, it } from "vitest";
import { readTemporalState } from "../../../storage/core/temporal.ts";
import { reapplyScope, sharedScopePaths } from "../../../storage/git/reapply.ts";
import { cwdKey } from "../../../storage/layout.ts";
import { StateStore, type BranchState } from "../../../storage/state-store.ts";
import { isStoreError } from "../../../storage/store-error.ts";
import { TempDirs, git } from "../../support/store-fixtures.ts";
import { machineStore } from "../../support/sync-machines.ts";

const temps = new TempDirs();
afterAll(() => temps.cleanup());

const CWD = "/work/project";

async function machine(name: string, bare: string, first: boolean) {
  const { root, env, store } = await machineStore(temps, name, bare, first);
  const identity = { cwd: CWD, cwdKey: cwdKey(CWD), sessionId: name, sessionKey: `2026-12-06T00-00-00-000Z_${name}` };
  const state = new StateStore(store, identity);
  let runtime: BranchState | null = null;
  const port = store.publication!;
  return {
    root,
    env,
    port,
    /** The session's state at a run's start (another machine's changes adopted). */
    current: async () => (runtime = runtime ? await state.refresh(runtime) : await state.start(null, "turn-end")),
    commit: async (patches: Record<string, unknown>) => {
      const now = runtime ? await state.refresh(runtime) : await state.start(null, "turn-end");
      runtime = (await state.commit(now, patches as never, "t")).runtime;
    },
    push: () => git(root, env, "push", "-q", "origin", "HEAD"),
    head: () => git(root, env, "rev-parse", "HEAD").trim(),
  };
}
type Machine = Awaited<ReturnType<typeof machine>>;

const working = async (m: Machine, scope: "global" | "cwd") =>
  readTemporalState((await m.current()).view, 0, scope).state.working;

/** A (first, pushed) and B (a clone), both started; then `diverge` makes each change global on its own. */
async function twoMachines() {
  const bare = temps.make("sf-reapply-bare-");
  git(bare, process.env, "init", "-q", "--bare");
  const a = await machine("a", bare, true);
  await a.commit({ global: { working: { shared: "start" }, artifacts: { "/notes.md": { description: "notes" } } } });
  a.push();
  const b = await machine("b", bare, false);
  await b.current();
  return { a, b };
}

async function diverged(m: Machine) {
  const standing = await m.port.sync.standing(await m.port.remote.fetchBranch());
  if (standing.kind !== "diverged") throw new Error(`expected diverged, got ${standing.kind}`);
  const plan = await m.port.sync.plan(standing.local, standing.remoteHead, standing.base);
  return { standing, plan };
}

/** A ReapplySource over a machine's real Git store that finds only `commits` (as if the rest had been folded). */
function readingCommits(m: Machine, commits: string[]) {
  const show = (revision: string, path: string) => {
    try {
      return Buffer.from(git(m.root, m.env, "show", `${revision}:${path}`));
    } catch {
      return null;
    }
  };
  return {
    commits: async () => commits,
    files: async (revision: string, paths: readonly string[]) => new Map(paths.map((p) => [p, show(revision, p)])),
  };
}

describe("re-applying this machine's transitions on the remote's state", () => {
  it("names the files of a shared scope, and none for a session or a file", () => {
    expect(sharedScopePaths("global")).toMatchObject({ name: "global", patches: "patches.jsonl" });
    expect(sharedScopePaths("cwd --k--")).toMatchObject({ name: "cwd", checkpoint: "--k--/checkpoint.json" });
    expect(sharedScopePaths("session --k--/s1")).toBeNull();
    expect(sharedScopePaths("file notes/README.md")).toBeNull();
  });

  it("writes this machine's transitions as new ones after the remote's: both machines end with both", async () => {
    const { a, b } = await twoMachines();
    await a.commit({ global: { working: { shared: "by a", a: "1" } } });
    a.push();
    await b.commit({ global: { working: { b: "1" } } });
    await b.commit({ global: { working: { b: "2", shared: "by b" } } });
    await b.commit({ global: { working: { a: "1" } } }); // what the remote already has: no new record
    const localHead = b.head();
    const { standing, plan } = await diverged(b);
    expect(plan.conflicts.map((c) => c.scope)).toEqual(["global"]);

    const receipt = await b.port.sync.join(standing, plan, new Map([["global", "reapply"]]));
    expect(receipt.reapplied).toEqual({ global: { applied: 2, present: 1, combined: false } });
    const parents = git(b.root, b.env, "rev-list", "--parents", "-n1", "HEAD").trim().split(" ").slice(1);
    expect(parents).toEqual([localHead, standing.remoteHead]);
    expect(git(b.root, b.env, "log", "-1", "--format=%s")).toMatch(/re-applied on it: global/);
    // The remote's values, with this machine's changes applied after them (its later "shared" wins).
    expect(await working(b, "global")).toEqual({ shared: "by b", a: "1", b: "2" });
    // Records after the remote's: the remote's stream, then two new transitions of one fresh lineage.
    const remoteTail = git(b.root, b.env, "show", `${standing.remoteHead}:patches.jsonl`).trim().split("\n");
    const tail = git(b.root, b.env, "show", "HEAD:patches.jsonl").trim().split("\n");
    expect(tail.slice(0, remoteTail.length)).toEqual(remoteTail);
    const added = tail.slice(remoteTail.length).map((line) => JSON.parse(line) as { lineage: string; step: number });
    expect(added).toHaveLength(2);
    expect(added[1]!.lineage).toBe(added[0]!.lineage);
    expect(added[0]!.step).toBeGreaterThan(JSON.parse(remoteTail.at(-1)!).step);
    expect(git(b.root, b.env, "status", "--porcelain")).toBe("");

    // Pushed, the other machine fast-forwards to it and reads the same state; both go on patching.
    b.push();
    const onA = await a.port.sync.standing(await a.port.remote.fetchBranch());
    expect(onA.kind).toBe("behind");
    if (onA.kind === "behind") await a.port.sync.fastForward(onA.local!, onA.remoteHead, onA.remote);
    expect(await working(a, "global")).toEqual({ shared: "by b", a: "1", b: "2" });
    await a.commit({ global: { working: { a: "2" } } });
    await b.commit({ global: { working: { b: "3" } } });
    expect(await working(b, "global")).toEqual({ shared: "by b", a: "1", b: "3" });
  });

  it("refused when the remote's state does not accept a transition: nothing written; a side works", async () => {
    const { a, b } = await twoMachines();
    await a.commit({ global: { artifacts: { "/notes.md": null } } }); // the remote removed the artifact
    a.push();
    await b.commit({ global: { artifacts: { "/notes.md": { tags: ["kept"] } } } }); // this machine tagged it
    const { standing, plan } = await diverged(b);
    const head = b.head();
    const refused = await b.port.sync.join(standing, plan, new Map([["global", "reapply"]])).catch((e) => e);
    expect(isStoreError(refused, "reapply-refused")).toBe(true);
    expect(String(refused)).toMatch(/global: this machine's transition 1 of 1 cannot be applied to the remote's/);
    expect(String(refused)).toMatch(/Nothing was written\. .*keep-local global .*take-remote global/);
    expect(b.head()).toBe(head);
    expect(git(b.root, b.env, "status", "--porcelain")).toBe("");
    // What it says works: take the remote's side.
    await b.port.sync.join(standing, plan, new Map([["global", "remote"]]));
    expect(readTemporalState((await b.current()).view, 0, "global").state.artifacts).toEqual({});
  });

  it("when the transitions cannot be read back one by one, the whole difference is one transition", async () => {
    const { a, b } = await twoMachines();
    await a.commit({ global: { working: { a: "1" } } });
    a.push();
    await b.commit({ global: { working: { b: "1" } } });
    await b.commit({ global: { working: { b: "2", c: "3" } } });
    const { standing } = await diverged(b);
    // No commit holds them (as if they had been folded into a checkpoint before they were committed).
    const source = readingCommits(b, []);
    const out = await reapplyScope(source, "global", standing);
    expect(out).toMatchObject({ applied: 1, present: 0, combined: true });
    const tail = out.writes.get("patches.jsonl")!.toString().trim().split("\n");
    expect(JSON.parse(tail.at(-1)!).patch).toEqual({ working: { b: "2", c: "3" } });
  });

  it("a record that does not apply to the state before it (its start folded away): one transition", async () => {
    const { a, b } = await twoMachines();
    await a.commit({ global: { working: { a: "1" } } });
    a.push();
    await b.commit({ global: { artifacts: { "/new.md": { description: "new" } } } });
    for (let i = 1; i <= 7; i++) await b.commit({ global: { artifacts: { "/new.md": { tags: [`t${i}`] } } } });
    const { standing } = await diverged(b);
    // Only the newest commit is read: its tail starts with a tag change of an artifact its checkpoint added.
    const source = readingCommits(b, [standing.local]);
    const out = await reapplyScope(source, "global", standing);
    expect(out).toMatchObject({ applied: 1, present: 0, combined: true });
    const tail = out.writes.get("patches.jsonl")!.toString().trim().split("\n");
    expect(JSON.parse(tail.at(-1)!).patch).toEqual({ artifacts: { "/new.md": { description: "new", tags: ["t7"] } } });
  });

  it("a session scope is not re-applied (only shared scopes travel between machines)", async () => {
    const { b } = await twoMachines();
    const source = { commits: async () => [], files: async () => new Map() };
    const refused = await reapplyScope(source, "session --k--/s1", { base: null, local: "x", remoteHead: "y" }).catch(
      (e: unknown) => e,
    );
    expect(isStoreError(refused, "reapply-refused")).toBe(true);
    expect(String(refused)).toMatch(/keep-local session --k--\/s1 or \/state-flow-sync take-remote/);
    expect(b.head()).toMatch(/^[0-9a-f]{40}$/);
  });
});
