// Several machines on one bare remote, with real git: each "machine" is its own store repository
// opened by openGitBackend. The standing after a fetch, a fast-forward that moves the branch to
// the fetched commit itself, a diverged line joined scope by scope, a conflict that writes nothing
// until a side is chosen, unrelated histories and an unreachable remote.
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GitBackend } from "../../../storage/git/git-backend.ts";
import { openGitBackend } from "../../../storage/git/git-backend.ts";
import { changedStatePaths, scopeOfPath } from "../../../storage/git/git-sync.ts";
import { isStoreError } from "../../../storage/store-error.ts";
import { GIT, gitBackendRepo } from "../../support/git-backend-fixture.ts";
import { TempDirs, cohortFixture, git } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const { g, c, s } = cohortFixture();

async function publish(backend: GitBackend, writes: Record<string, string>, message = "cohort") {
  const paths = Object.keys(writes);
  const basis = await backend.loadCurrent(paths);
  const bytes = new Map(paths.map((path) => [path, Buffer.from(writes[path]!)]));
  return backend.publish({ basis, writes: bytes, message });
}

/** Machine A (a new store with a first cohort, pushed) and the bare remote both machines share. */
async function machineA() {
  const a = await gitBackendRepo(temps);
  await publish(a.backend, { [g.checkpoint]: "g0", [g.patches]: "", [g.meta]: "gm0" }, "start");
  const bare = temps.make("sf-sync-bare-");
  git(bare, a.env, "init", "-q", "--bare");
  git(a.root, a.env, "remote", "add", "origin", bare);
  const head = (await a.backend.head()).revision!;
  expect(await a.backend.remote.pushRevision(head)).toEqual({ kind: "pushed", remote: "origin" });
  return { ...a, bare };
}

/** Machine B: the remote cloned into a store of its own (the README's set-up for a second machine). */
async function machineB(bare: string, env: NodeJS.ProcessEnv) {
  const root = join(temps.make("sf-sync-b-"), "state-flow");
  git(temps.make("sf-sync-cwd-"), env, "clone", "-q", bare, root);
  const backend = (await openGitBackend({ root, binary: GIT, env, counter: { count: 0 }, generation: "b" }))!;
  return { root, backend };
}

const standingOf = async (backend: GitBackend) => backend.sync.standing(await backend.remote.fetchBranch());
const read = (root: string, path: string) => git(root, process.env, "show", `HEAD:${path}`);

describe("where the branch stands against the remote's", () => {
  it("names the state paths two scope states differ in (keys added, changed, removed; the response)", () => {
    const state = (working: Record<string, string>, response = "") => ({
      artifacts: {},
      contract: {},
      working,
      response,
    });
    expect(changedStatePaths(state({ a: "1", b: "2" }), state({ a: "1", b: "3", c: "4" }, "done"))).toEqual([
      "working.b",
      "working.c",
      "response",
    ]);
    expect(changedStatePaths(null, state({ a: "1" }))).toEqual(["working.a"]);
    expect(changedStatePaths(state({ a: "1" }), state({ a: "1" }))).toEqual([]);
  });

  it("names each path's scope: global, a cwd, a session, or a file of no scope", () => {
    expect(scopeOfPath(g.patches)).toBe("global");
    expect(scopeOfPath(c.checkpoint)).toBe("cwd --tmp-project--");
    expect(scopeOfPath(s.meta)).toBe(`session ${s.meta.split("/").slice(0, 2).join("/")}`);
    expect(scopeOfPath("notes/README.md")).toBe("file notes/README.md");
  });

  it("is local-only without a remote, ahead before the first push, equal after it", async () => {
    const a = await gitBackendRepo(temps);
    await publish(a.backend, { [g.checkpoint]: "g0" });
    expect(await standingOf(a.backend)).toEqual({ kind: "local-only" });
    const bare = temps.make("sf-sync-bare-");
    git(bare, a.env, "init", "-q", "--bare");
    git(a.root, a.env, "remote", "add", "origin", bare);
    const head = (await a.backend.head()).revision!;
    expect(await standingOf(a.backend)).toEqual({ kind: "ahead", remote: "origin", local: head, remoteHead: null });
    await a.backend.remote.pushRevision(head);
    expect(await standingOf(a.backend)).toEqual({ kind: "equal", remote: "origin", head });
    // The fetch wrote the remote-tracking ref and nothing else: no FETCH_HEAD, the worktree clean.
    const branch = (await a.backend.head()).ref.slice("refs/heads/".length);
    expect(git(a.root, a.env, "rev-parse", `refs/remotes/origin/${branch}`).trim()).toBe(head);
    expect(() => git(a.root, a.env, "rev-parse", "--verify", "-q", "FETCH_HEAD")).toThrow();
    expect(git(a.root, a.env, "status", "--porcelain")).toBe("");
  });

  it("is unreachable, with git's cause, when the remote cannot be fetched", async () => {
    const a = await gitBackendRepo(temps);
    await publish(a.backend, { [g.checkpoint]: "g0" });
    git(a.root, a.env, "remote", "add", "origin", join(temps.make("sf-sync-gone-"), "missing.git"));
    const standing = await standingOf(a.backend);
    expect(standing.kind).toBe("unreachable");
    expect(standing.kind === "unreachable" && standing.detail).toMatch(/missing\.git|does not appear/);
  });
});

describe("bringing in another machine's line", () => {
  it("behind: fast-forwards to the fetched commit itself, files 0600, and is equal after", async () => {
    const a = await machineA();
    const b = await machineB(a.bare, a.env);
    await publish(a.backend, { [g.checkpoint]: "g1", [g.patches]: "p1\n" }, "A1");
    const a1 = (await a.backend.head()).revision!;
    await a.backend.remote.pushRevision(a1);
    const standing = await standingOf(b.backend);
    expect(standing).toMatchObject({ kind: "behind", remote: "origin", remoteHead: a1 });
    if (standing.kind !== "behind") return;
    await b.backend.sync.fastForward(standing.local!, a1, "origin");
    expect((await b.backend.head()).revision).toBe(a1); // no commit of its own: the remote's
    expect(read(b.root, g.checkpoint)).toBe("g1");
    expect(statSync(join(b.root, g.checkpoint)).mode & 0o777).toBe(0o600);
    expect(git(b.root, a.env, "status", "--porcelain")).toBe("");
    expect((await standingOf(b.backend)).kind).toBe("equal");
  });

  it("behind, but the branch moved since the fetch: refused as stale, nothing changed", async () => {
    const a = await machineA();
    const b = await machineB(a.bare, a.env);
    await publish(a.backend, { [g.checkpoint]: "g1" }, "A1");
    await a.backend.remote.pushRevision((await a.backend.head()).revision!);
    const standing = await standingOf(b.backend);
    if (standing.kind !== "behind") throw new Error(`expected behind, got ${standing.kind}`);
    await publish(b.backend, { [s.checkpoint]: "mine" }, "B1");
    const b1 = (await b.backend.head()).revision;
    const error = await b.backend.sync.fastForward(standing.local!, standing.remoteHead, "origin").catch((e) => e);
    expect(isStoreError(error, "stale-basis")).toBe(true);
    expect((await b.backend.head()).revision).toBe(b1);
    expect((await standingOf(b.backend)).kind).toBe("diverged");
  });

  it("diverged on different scopes: both kept in one two-parent commit, a fast-forward for the remote", async () => {
    const a = await machineA();
    const b = await machineB(a.bare, a.env);
    await publish(a.backend, { [g.checkpoint]: "g-from-a" }, "A1");
    await a.backend.remote.pushRevision((await a.backend.head()).revision!);
    await publish(b.backend, { [s.checkpoint]: "session-of-b", [c.checkpoint]: "cwd-of-b" }, "B1");
    const standing = await standingOf(b.backend);
    if (standing.kind !== "diverged") throw new Error(`expected diverged, got ${standing.kind}`);
    const plan = await b.backend.sync.plan(standing.local, standing.remoteHead, standing.base);
    expect(plan.fromRemote).toEqual(["global"]);
    expect([...plan.kept].sort()).toEqual(["cwd --tmp-project--", scopeOfPath(s.checkpoint)].sort());
    expect(plan.conflicts).toEqual([]);
    const receipt = await b.backend.sync.join(standing, plan, new Map());
    const parents = git(b.root, a.env, "rev-list", "--parents", "-n1", receipt.pointer.revision).trim().split(" ");
    expect(parents.slice(1)).toEqual([standing.local, standing.remoteHead]);
    expect(read(b.root, g.checkpoint)).toBe("g-from-a");
    expect(read(b.root, s.checkpoint)).toBe("session-of-b");
    expect(await b.backend.remote.pushRevision(receipt.pointer.revision)).toEqual({ kind: "pushed", remote: "origin" });
    // Machine A is now behind and fast-forwards to the joined commit.
    const atA = await standingOf(a.backend);
    if (atA.kind !== "behind") throw new Error(`expected behind, got ${atA.kind}`);
    await a.backend.sync.fastForward(atA.local!, atA.remoteHead, "origin");
    expect((await a.backend.head()).revision).toBe(receipt.pointer.revision);
    expect(read(a.root, c.checkpoint)).toBe("cwd-of-b");
  });

  it("a scope changed on both sides is a named conflict: nothing written until a side is chosen", async () => {
    const a = await machineA();
    const b = await machineB(a.bare, a.env);
    await publish(a.backend, { [g.checkpoint]: "g-a", [g.patches]: "a1\n" }, "A1");
    await a.backend.remote.pushRevision((await a.backend.head()).revision!);
    await publish(b.backend, { [g.checkpoint]: "g-b", [g.patches]: "b1\n" }, "B1");
    const standing = await standingOf(b.backend);
    if (standing.kind !== "diverged") throw new Error(`expected diverged, got ${standing.kind}`);
    const plan = await b.backend.sync.plan(standing.local, standing.remoteHead, standing.base);
    expect(plan.conflicts).toEqual([
      { scope: "global", localPaths: [g.checkpoint, g.patches], remotePaths: [g.checkpoint, g.patches] },
    ]);
    expect(plan.localStartOnly).toBe(false);
    const error = await b.backend.sync.join(standing, plan, new Map()).catch((e: unknown) => e);
    expect(isStoreError(error, "sync-conflict")).toBe(true);
    expect(String(error)).toMatch(/global changed on this machine and on the remote.*keep-local.*take-remote/);
    expect((await b.backend.head()).revision).toBe(standing.local);
    // Doing what it says works: the remote's side for global.
    const receipt = await b.backend.sync.join(standing, plan, new Map([["global", "remote"]]));
    expect(read(b.root, g.checkpoint)).toBe("g-a");
    expect(await b.backend.remote.pushRevision(receipt.pointer.revision)).toMatchObject({ kind: "pushed" });
    // …or this machine's side.
    const kept = await machineB(a.bare, a.env);
    expect((await kept.backend.head()).revision).toBe(receipt.pointer.revision);
  });

  it("keep-local joins the remote's line and keeps this machine's bytes for the scope", async () => {
    const a = await machineA();
    const b = await machineB(a.bare, a.env);
    await publish(a.backend, { [g.checkpoint]: "g-a" }, "A1");
    await a.backend.remote.pushRevision((await a.backend.head()).revision!);
    await publish(b.backend, { [g.checkpoint]: "g-b" }, "B1");
    const standing = await standingOf(b.backend);
    if (standing.kind !== "diverged") throw new Error(`expected diverged, got ${standing.kind}`);
    const plan = await b.backend.sync.plan(standing.local, standing.remoteHead, standing.base);
    const receipt = await b.backend.sync.join(standing, plan, new Map([["global", "local"]]));
    expect(read(b.root, g.checkpoint)).toBe("g-b");
    expect(await b.backend.remote.pushRevision(receipt.pointer.revision)).toMatchObject({ kind: "pushed" });
  });

  it("unrelated histories are named; a store holding only its start is told apart", async () => {
    const a = await machineA();
    const other = await gitBackendRepo(temps);
    await publish(other.backend, { [g.checkpoint]: "own start", [g.patches]: "", [g.meta]: "own" }, "start");
    git(other.root, other.env, "remote", "add", "origin", a.bare);
    const standing = await standingOf(other.backend);
    if (standing.kind !== "unrelated") throw new Error(`expected unrelated, got ${standing.kind}`);
    const plan = await other.backend.sync.plan(standing.local, standing.remoteHead, null);
    expect(plan.conflicts.map((c) => c.scope)).toEqual(["global"]);
    expect(plan.localStartOnly).toBe(true);
    await other.backend.sync.join(standing, plan, new Map([["global", "remote"]]));
    expect(read(other.root, g.checkpoint)).toBe("g0");
    expect(git(other.root, other.env, "merge-base", "--is-ancestor", standing.remoteHead, "HEAD")).toBe("");
  });
});
