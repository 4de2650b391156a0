import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GitPushResult } from "../../storage/git-backend.ts";
import { openGitBackend } from "../../storage/git-backend.ts";
import { findGitExecutable } from "../../storage/git-runner.ts";
import { cohortPaths, scopeFiles } from "../../storage/layout.ts";
import { createPublication, gitPusher, type PendingPublication, type Pusher } from "../../storage/publication.ts";
import { TempDirs, git, gitTestEnv } from "./helpers.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const keys = { cwdKey: "--p--", sessionKey: "2026-01-01T00-00-00-000Z_u" };
const paths = cohortPaths(keys);
const meta = scopeFiles("session", keys).meta;

/** A pusher whose results the test releases by hand (pure policy logic; real git is tested below). */
function manualPusher() {
  const calls: Array<{ revision: string; resolve: (r: GitPushResult) => void }> = [];
  const pusher: Pusher = { push: (revision) => new Promise((resolve) => calls.push({ revision, resolve })) };
  return { pusher, calls };
}

async function gitStore() {
  const home = temps.make("sf-pub-");
  const cfg = join(home, "gitconfig");
  writeFileSync(cfg, "");
  const env = gitTestEnv(cfg);
  const remote = join(home, "remote.git");
  git(home, env, "init", "-q", "--bare", remote);
  const root = join(home, "state-flow");
  const backend = (await openGitBackend({ root, binary: findGitExecutable()!, env, generation: "g", init: true }))!;
  let n = 0;
  const commit = async () => {
    const basis = await backend.loadCurrent(paths);
    return (await backend.publish({ basis, writes: new Map([[meta, Buffer.from(`{"n":${++n}}`)]]) })).pointer.revision;
  };
  return { home, env, remote, root, backend, commit };
}

describe("publication policies", () => {
  it("file-only stores publish nothing and report no fake pending", async () => {
    const pub = createPublication({ pusher: null });
    expect(await pub.accepted("x")).toEqual({ kind: "file-only" });
    expect(pub.turnEnd()).toEqual({ kind: "file-only" });
    expect(pub.pending).toBeNull();
  });

  it("off keeps commits local", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ policy: "off", pusher });
    expect(await pub.accepted("a")).toEqual({ kind: "kept-local", revision: "a" });
    expect(pub.turnEnd()).toEqual({ kind: "idle" });
    expect(calls).toHaveLength(0);
  });

  it("turn-end queues only the newest target and pushes asynchronously at turn end", async () => {
    const { pusher, calls } = manualPusher();
    const persisted: Array<PendingPublication | null> = [];
    const pub = createPublication({ pusher, onPendingChange: (p) => persisted.push(p) });
    expect(await pub.accepted("a")).toEqual({ kind: "queued", revision: "a" });
    expect(await pub.accepted("b")).toEqual({ kind: "queued", revision: "b" });
    expect(calls).toHaveLength(0); // nothing pushed before turn end
    expect(pub.turnEnd()).toEqual({ kind: "pushing", revision: "b" });
    expect(calls.map((c) => c.revision)).toEqual(["b"]);
    calls[0]!.resolve({ kind: "pushed", remote: "origin" });
    await pub.settled();
    expect(pub.pending).toBeNull();
    expect(persisted).toEqual([{ revision: "a", attempts: 0 }, { revision: "b", attempts: 0 }, null]);
  });

  it("a late result never acknowledges a newer target", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ pusher });
    await pub.accepted("a");
    pub.turnEnd();
    await pub.accepted("b"); // newer target while a's push is in flight
    calls[0]!.resolve({ kind: "pushed" });
    await new Promise((r) => setTimeout(r, 0));
    expect(pub.pending).toEqual({ revision: "b", attempts: 0 });
    pub.turnEnd();
    await new Promise((r) => setTimeout(r, 0));
    expect(calls.map((c) => c.revision)).toEqual(["a", "b"]);
    calls[1]!.resolve({ kind: "failed", detail: "network down" });
    await pub.settled();
    expect(pub.pending).toEqual({ revision: "b", attempts: 1, lastError: "network down" });
  });

  it("shutdown fences the old generation: late results are ignored", async () => {
    const { pusher, calls } = manualPusher();
    const persisted: Array<PendingPublication | null> = [];
    const pub = createPublication({ pusher, onPendingChange: (p) => persisted.push(p) });
    await pub.accepted("a");
    pub.turnEnd();
    expect(pub.shutdown()).toEqual({ revision: "a", attempts: 0 });
    calls[0]!.resolve({ kind: "pushed" });
    await pub.settled();
    expect(persisted).toEqual([{ revision: "a", attempts: 0 }]); // no late acknowledgement after shutdown
    expect(await pub.retry()).toEqual({ kind: "fenced" });
  });

  it("an unreachable target (history reset) is reported once, not retried forever", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ pusher, restored: { revision: "gone", attempts: 2 } });
    const result = pub.retry();
    calls[0]!.resolve({ kind: "unreachable", detail: "bad object gone" });
    expect(await result).toMatchObject({ kind: "unreachable", revision: "gone" });
    expect(pub.pending).toBeNull();
  });

  it("no remote configured is local-only, not an error (real git)", async () => {
    const { backend, commit } = await gitStore();
    const pub = createPublication({ policy: "transition", pusher: gitPusher(backend) });
    const revision = await commit();
    expect(await pub.accepted(revision)).toEqual({ kind: "local-only", revision });
    expect(pub.pending).toBeNull();
  });

  it("transition pushes synchronously to a bare remote (real git)", async () => {
    const { backend, commit, remote, root, env } = await gitStore();
    git(root, env, "remote", "add", "origin", remote);
    const pub = createPublication({ policy: "transition", pusher: gitPusher(backend) });
    const revision = await commit();
    expect(await pub.accepted(revision)).toMatchObject({ kind: "pushed", revision, remote: "origin" });
    const branch = git(root, env, "symbolic-ref", "--short", "HEAD").trim();
    expect(git(remote, env, "rev-parse", branch).trim()).toBe(revision);
  });

  it("unreachable remote → pending → restart with the persisted target → remote fixed → pushed (real git)", async () => {
    const { backend, commit, remote, root, env, home } = await gitStore();
    git(root, env, "remote", "add", "origin", join(home, "does-not-exist.git"));
    let persisted: PendingPublication | null = null;
    const first = createPublication({ pusher: gitPusher(backend), onPendingChange: (p) => (persisted = p) });
    const r1 = await commit();
    await first.accepted(r1);
    const r2 = await commit();
    await first.accepted(r2);
    expect(first.turnEnd()).toEqual({ kind: "pushing", revision: r2 });
    await first.settled();
    expect(persisted).toMatchObject({ revision: r2, attempts: 1 });
    expect(persisted!.lastError).toMatch(/does-not-exist/);
    const saved = first.shutdown();
    expect(saved).toEqual(persisted);

    // restart: a new generation gets the persisted intent; the remote is fixed meanwhile
    git(root, env, "remote", "set-url", "origin", remote);
    const headBefore = git(root, env, "rev-parse", "HEAD").trim();
    const second = createPublication({ pusher: gitPusher(backend), restored: saved, onPendingChange: (p) => (persisted = p) });
    expect(second.pending).toEqual(saved);
    expect(await second.retry()).toMatchObject({ kind: "pushed", revision: r2 });
    expect(persisted).toBeNull();
    const branch = git(root, env, "symbolic-ref", "--short", "HEAD").trim();
    expect(git(remote, env, "rev-parse", branch).trim()).toBe(r2);
    expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(headBefore); // the existing commit was pushed, nothing re-applied
  });
});
