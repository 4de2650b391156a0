import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GitPushResult, RemoteAnswer } from "../../storage/git/git-remote.ts";
import { openGitBackend } from "../../storage/git/git-backend.ts";
import { findGitExecutable } from "../../storage/git/git-runner.ts";
import { cohortPaths, scopeFiles } from "../../storage/layout.ts";
import { gitPusher } from "../../runtime/branch-publication.ts";
import { createPublication, openPublication, type PendingPublication, type Pusher } from "../../runtime/publication.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

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

/** Counts the pushes a real pusher runs. */
function counting(inner: Pusher) {
  const pushed: string[] = [];
  const pusher: Pusher = {
    push: (revision) => {
      pushed.push(revision);
      return inner.push(revision);
    },
    ...(inner.hasRemote ? { hasRemote: () => inner.hasRemote!() } : {}),
    ...(inner.ask ? { ask: (revision: string, signal: AbortSignal) => inner.ask!(revision, signal) } : {}),
  };
  return { pusher, pushed };
}

/** A manual pusher that can also be asked about a restored target; the test gives each answer. */
function askingPusher() {
  const { pusher, calls } = manualPusher();
  const asks: Array<{ revision: string; signal: AbortSignal; answer: (a: RemoteAnswer) => void }> = [];
  const asking: Pusher = {
    ...pusher,
    ask: (revision, signal) => new Promise((answer) => asks.push({ revision, signal, answer })),
  };
  return { pusher: asking, calls, asks };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** Records whether a promise has settled yet. */
function track<T>(promise: Promise<T>) {
  const state: { done: boolean; value?: T } = { done: false };
  void promise.then((value) => {
    state.done = true;
    state.value = value;
  });
  return state;
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
    expect(pub.runEnd()).toEqual({ kind: "file-only" });
    expect(pub.pending).toBeNull();
  });

  it("off keeps commits local", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ policy: "off", pusher });
    expect(await pub.accepted("a")).toEqual({ kind: "kept-local", revision: "a" });
    expect(pub.runEnd()).toEqual({ kind: "idle" });
    expect(calls).toHaveLength(0);
  });

  it("turn-end queues only the newest target and pushes asynchronously at run end", async () => {
    const { pusher, calls } = manualPusher();
    const persisted: Array<PendingPublication | null> = [];
    const pub = createPublication({ pusher, onPendingChange: (p) => persisted.push(p) });
    expect(await pub.accepted("a")).toEqual({ kind: "queued", revision: "a" });
    expect(await pub.accepted("b")).toEqual({ kind: "queued", revision: "b" });
    expect(calls).toHaveLength(0); // nothing pushed before run end
    expect(pub.runEnd()).toEqual({ kind: "pushing", revision: "b" });
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
    pub.runEnd();
    await pub.accepted("b"); // newer target while a's push is in flight
    calls[0]!.resolve({ kind: "pushed" });
    await new Promise((r) => setTimeout(r, 0));
    expect(pub.pending).toEqual({ revision: "b", attempts: 0 });
    pub.runEnd();
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
    pub.runEnd();
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

  it(
    "unreachable with a newer target queued: reported once for " +
      "that target, the newer target is pushed at once (transition)",
    async () => {
      const { pusher, calls } = manualPusher();
      const persisted: Array<PendingPublication | null> = [];
      const pub = createPublication({ policy: "transition", pusher, onPendingChange: (p) => persisted.push(p) });
      const a = track(pub.accepted("a"));
      const b = track(pub.accepted("b"));
      await tick();
      calls[0]!.resolve({ kind: "unreachable", detail: "bad object a" });
      await tick();
      expect(a.value).toEqual({ kind: "unreachable", revision: "a", error: "bad object a" });
      expect(calls.map((c) => c.revision)).toEqual(["a", "b"]);
      expect(pub.pending).toEqual({ revision: "b", attempts: 0 });
      calls[1]!.resolve({ kind: "pushed" });
      await pub.settled();
      expect(b.value).toEqual({ kind: "pushed", revision: "b" });
      expect(pub.pending).toBeNull();
      // "a" never became pending
      expect(persisted).toEqual([{ revision: "a", attempts: 0 }, { revision: "b", attempts: 0 }, null]);
    },
  );

  it(
    "unreachable after a run end with a newer target " + "queued: the newer target is pushed right away (turn-end)",
    async () => {
      const { pusher, calls } = manualPusher();
      const pub = createPublication({ pusher });
      await pub.accepted("a");
      pub.runEnd();
      await pub.accepted("b");
      pub.runEnd();
      calls[0]!.resolve({ kind: "unreachable", detail: "bad object a" });
      await tick();
      expect(calls.map((c) => c.revision)).toEqual(["a", "b"]);
      calls[1]!.resolve({ kind: "failed", detail: "offline" });
      await pub.settled();
      expect(pub.pending).toEqual({ revision: "b", attempts: 1, lastError: "offline" });
    },
  );

  it(
    "transition: accepted() resolves only after this cohort's " +
      "push result; a cohort accepted meanwhile is pushed next",
    async () => {
      const { pusher, calls } = manualPusher();
      const pub = createPublication({ policy: "transition", pusher });
      const a = track(pub.accepted("a"));
      await tick();
      expect(calls.map((c) => c.revision)).toEqual(["a"]);
      expect(a.done).toBe(false); // synchronous policy: waits for the push result
      const b = track(pub.accepted("b")); // a is still in flight: b queues behind it
      await tick();
      expect(calls).toHaveLength(1);
      calls[0]!.resolve({ kind: "pushed", remote: "origin" });
      await tick();
      expect(a.value).toEqual({ kind: "pushed", revision: "a", remote: "origin" });
      expect(calls.map((c) => c.revision)).toEqual(["a", "b"]); // pushed right after a's result, no run end needed
      expect(b.done).toBe(false);
      calls[1]!.resolve({ kind: "failed", detail: "offline" });
      await tick();
      expect(b.value).toEqual({ kind: "pending", revision: "b", error: "offline" });
      expect(pub.pending).toEqual({ revision: "b", attempts: 1, lastError: "offline" });
    },
  );

  it(
    "transition: a cohort superseded while queued behind " + "a push resolves as superseded, the newest is pushed",
    async () => {
      const { pusher, calls } = manualPusher();
      const pub = createPublication({ policy: "transition", pusher });
      const a = track(pub.accepted("a"));
      const b = track(pub.accepted("b"));
      const c = track(pub.accepted("c"));
      await tick();
      expect(b.value).toEqual({ kind: "superseded", revision: "b" });
      calls[0]!.resolve({ kind: "pushed" });
      await tick();
      expect(a.value).toEqual({ kind: "pushed", revision: "a" });
      expect(calls.map((x) => x.revision)).toEqual(["a", "c"]);
      calls[1]!.resolve({ kind: "pushed" });
      await pub.settled();
      expect(c.value).toEqual({ kind: "pushed", revision: "c" });
      expect(pub.pending).toBeNull();
    },
  );

  it("turn-end: a run end during a push pushes the newer target right after the result (not lost)", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ pusher });
    await pub.accepted("a");
    pub.runEnd();
    await pub.accepted("b");
    expect(pub.runEnd()).toEqual({ kind: "pushing", revision: "b" });
    await tick();
    expect(calls.map((c) => c.revision)).toEqual(["a"]); // one push at a time
    calls[0]!.resolve({ kind: "failed", detail: "offline" });
    await tick();
    expect(calls.map((c) => c.revision)).toEqual(["a", "b"]);
    calls[1]!.resolve({ kind: "pushed" });
    await pub.settled();
    expect(pub.pending).toBeNull();
  });

  it("turn-end: a cohort accepted after the run end waits for its own run end", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ pusher });
    await pub.accepted("a");
    pub.runEnd();
    await pub.accepted("b");
    pub.runEnd();
    await pub.accepted("c"); // c's run has not ended yet
    calls[0]!.resolve({ kind: "pushed" });
    await tick();
    expect(calls.map((x) => x.revision)).toEqual(["a"]);
    expect(pub.pending).toEqual({ revision: "c", attempts: 0 });
    expect(pub.runEnd()).toEqual({ kind: "pushing", revision: "c" });
    expect(calls.map((x) => x.revision)).toEqual(["a", "c"]);
  });

  it("a push that throws is a pending failure, retried with the same commit", async () => {
    let fail = true;
    const pushed: string[] = [];
    const pusher: Pusher = {
      push: async (revision) => {
        pushed.push(revision);
        if (fail) throw new Error("spawn failed");
        return { kind: "pushed" };
      },
    };
    const pub = createPublication({ policy: "transition", pusher });
    expect(await pub.accepted("a")).toEqual({ kind: "pending", revision: "a", error: "spawn failed" });
    expect(await pub.retry()).toEqual({ kind: "pending", revision: "a", error: "spawn failed" });
    expect(pub.pending).toEqual({ revision: "a", attempts: 2, lastError: "spawn failed" });
    fail = false;
    expect(await pub.retry()).toEqual({ kind: "pushed", revision: "a" });
    expect(pushed).toEqual(["a", "a", "a"]);
    expect(await pub.retry()).toEqual({ kind: "idle" });
  });

  it("a restored pending publication under a route that publishes nothing is dropped and reported cleared", () => {
    const restored = { revision: "r", attempts: 1, lastError: "offline" };
    for (const options of [
      { pusher: null },
      { pusher: manualPusher().pusher, remote: false },
      { pusher: manualPusher().pusher, policy: "off" as const },
    ]) {
      const persisted: Array<PendingPublication | null> = [];
      const pub = createPublication({ ...options, restored, onPendingChange: (p) => persisted.push(p) });
      expect(pub.pending).toBeNull();
      expect(persisted).toEqual([null]);
    }
    // the remote route keeps it and does not rewrite the pending publication the caller already persisted
    const persisted: Array<PendingPublication | null> = [];
    const pub = createPublication({
      pusher: manualPusher().pusher,
      restored,
      onPendingChange: (p) => persisted.push(p),
    });
    expect(pub.pending).toEqual(restored);
    expect(persisted).toEqual([]);
  });

  it("a late push result after shutdown resolves a waiting transition caller as fenced", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ policy: "transition", pusher });
    const a = pub.accepted("a");
    await tick();
    expect(pub.shutdown()).toEqual({ revision: "a", attempts: 0 });
    expect(await a).toEqual({ kind: "fenced" });
    calls[0]!.resolve({ kind: "pushed" });
    await pub.settled();
    expect(pub.pending).toBeNull();
    expect(await pub.accepted("b")).toEqual({ kind: "fenced" });
    expect(calls).toHaveLength(1);
  });

  it("no remote configured is local-only, not an error (real git)", async () => {
    const { backend, commit } = await gitStore();
    const pub = createPublication({ policy: "transition", pusher: gitPusher(backend.remote) });
    const revision = await commit();
    expect(await pub.accepted(revision)).toEqual({ kind: "local-only", revision });
    expect(pub.pending).toBeNull();
    // routed local-only now: no further push
    expect(await pub.accepted(await commit())).toMatchObject({ kind: "local-only" });
  });

  it(
    "openPublication asks the backend for a remote: none → " +
      "local-only without a push or a pending publication (real git)",
    async () => {
      const { backend, commit } = await gitStore();
      const { pusher, pushed } = counting(gitPusher(backend.remote));
      const persisted: Array<PendingPublication | null> = [];
      const pub = await openPublication({ pusher, onPendingChange: (p) => persisted.push(p) });
      const revision = await commit();
      expect(await pub.accepted(revision)).toEqual({ kind: "local-only", revision });
      expect(pub.runEnd()).toEqual({ kind: "idle" });
      await pub.settled();
      expect(pushed).toEqual([]);
      expect(persisted).toEqual([]);
      expect(pub.pending).toBeNull();
    },
  );

  it("transition pushes synchronously to a bare remote (real git)", async () => {
    const { backend, commit, remote, root, env } = await gitStore();
    git(root, env, "remote", "add", "origin", remote);
    const pub = createPublication({ policy: "transition", pusher: gitPusher(backend.remote) });
    const revision = await commit();
    expect(await pub.accepted(revision)).toMatchObject({ kind: "pushed", revision, remote: "origin" });
    const branch = git(root, env, "symbolic-ref", "--short", "HEAD").trim();
    expect(git(remote, env, "rev-parse", branch).trim()).toBe(revision);
  });

  it("a revision the remote already holds is pushed; one beside the remote's head: rejected (real git)", async () => {
    const { backend, commit, remote, root, env } = await gitStore();
    git(root, env, "remote", "add", "origin", remote);
    const older = await commit();
    const newer = await commit();
    expect(await backend.remote.pushRevision(newer)).toEqual({ kind: "pushed", remote: "origin" });
    expect(await backend.remote.pushRevision(older)).toEqual({ kind: "pushed", remote: "origin" });
    const branch = git(root, env, "symbolic-ref", "--short", "HEAD").trim();
    expect(git(remote, env, "rev-parse", branch).trim()).toBe(newer);
    // A commit beside the remote's head (not contained in it) is a real rejection: a sync must come first.
    const tree = git(root, env, "rev-parse", `${older}^{tree}`).trim();
    const beside = git(root, env, "commit-tree", tree, "-p", older, "-m", "beside").trim();
    expect(await backend.remote.pushRevision(beside)).toMatchObject({ kind: "rejected", remote: "origin" });
  });

  it("turn-end with a bare remote pushes only the newest target asynchronously at run end (real git)", async () => {
    const { backend, commit, remote, root, env } = await gitStore();
    git(root, env, "remote", "add", "origin", remote);
    const { pusher, pushed } = counting(gitPusher(backend.remote));
    const pub = await openPublication({ pusher });
    const r1 = await commit();
    expect(await pub.accepted(r1)).toEqual({ kind: "queued", revision: r1 });
    const r2 = await commit();
    expect(await pub.accepted(r2)).toEqual({ kind: "queued", revision: r2 });
    expect(pushed).toEqual([]);
    expect(pub.runEnd()).toEqual({ kind: "pushing", revision: r2 });
    await pub.settled();
    expect(pushed).toEqual([r2]);
    const branch = git(root, env, "symbolic-ref", "--short", "HEAD").trim();
    expect(git(remote, env, "rev-parse", branch).trim()).toBe(r2);
    expect(pub.pending).toBeNull();
  });

  it("policy off keeps commits local even with a remote (real git)", async () => {
    const { backend, commit, remote, root, env } = await gitStore();
    git(root, env, "remote", "add", "origin", remote);
    const { pusher, pushed } = counting(gitPusher(backend.remote));
    const pub = await openPublication({ policy: "off", pusher });
    const revision = await commit();
    expect(await pub.accepted(revision)).toEqual({ kind: "kept-local", revision });
    expect(pub.runEnd()).toEqual({ kind: "idle" });
    await pub.settled();
    expect(pushed).toEqual([]);
    expect(git(remote, env, "for-each-ref").trim()).toBe("");
  });

  it(
    "unreachable remote → pending → restart with the " + "persisted target → remote fixed → pushed (real git)",
    async () => {
      const { backend, commit, remote, root, env, home } = await gitStore();
      git(root, env, "remote", "add", "origin", join(home, "does-not-exist.git"));
      let persisted: PendingPublication | null = null;
      const first = await openPublication({
        pusher: gitPusher(backend.remote),
        onPendingChange: (p) => (persisted = p),
      });
      const r1 = await commit();
      await first.accepted(r1);
      const r2 = await commit();
      await first.accepted(r2);
      expect(first.runEnd()).toEqual({ kind: "pushing", revision: r2 });
      await first.settled();
      expect(persisted).toMatchObject({ revision: r2, attempts: 1 });
      expect(persisted!.lastError).toMatch(/does-not-exist/);
      const saved = first.shutdown();
      expect(saved).toEqual(persisted);

      // restart: a new generation gets the persisted pending publication; the remote is fixed meanwhile
      git(root, env, "remote", "set-url", "origin", remote);
      const headBefore = git(root, env, "rev-parse", "HEAD").trim();
      const second = await openPublication({
        pusher: gitPusher(backend.remote),
        restored: saved,
        onPendingChange: (p) => (persisted = p),
      });
      expect(second.pending).toEqual(saved);
      expect(await second.retry()).toMatchObject({ kind: "pushed", revision: r2 });
      expect(persisted).toBeNull();
      const branch = git(root, env, "symbolic-ref", "--short", "HEAD").trim();
      expect(git(remote, env, "rev-parse", branch).trim()).toBe(r2);
      // the existing commit was pushed, nothing re-applied
      expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(headBefore);
    },
  );
});

describe("regression: a target accepted while its own push is in flight", () => {
  it("is not re-queued, so a failed push never strands later transition-policy callers", async () => {
    // The test answers each push itself, so r1 is accepted again while its push is certainly in flight,
    // and a stranded caller shows as a push never asked for (no timeout decides it).
    const { pusher, calls } = manualPusher();
    const driver = createPublication({
      policy: "transition",
      remote: true,
      restored: { revision: "r1", attempts: 0 },
      pusher,
    });
    const retry = track(driver.retry());
    const same = track(driver.accepted("r1"));
    await tick();
    expect(calls.map((c) => c.revision)).toEqual(["r1"]);
    expect([retry.done, same.done], "both wait for r1's push").toEqual([false, false]);
    calls[0]!.resolve({ kind: "failed", detail: "remote down" });
    await tick();
    expect(same.value).toEqual({ kind: "pending", revision: "r1", error: "remote down" });
    expect(retry.value).toEqual({ kind: "pending", revision: "r1", error: "remote down" });
    const next = track(driver.accepted("r2"));
    await tick();
    expect(
      calls.map((c) => c.revision),
      "r2 is pushed, not stranded behind a re-queued r1",
    ).toEqual(["r1", "r2"]);
    calls[1]!.resolve({ kind: "failed", detail: "remote down" });
    await tick();
    expect(next.value).toEqual({ kind: "pending", revision: "r2", error: "remote down" });
  });

  it(
    "re-accepting the in-flight target supersedes an older " + "queued target; every caller settles after one push",
    async () => {
      const { pusher, calls } = manualPusher();
      const pub = createPublication({ policy: "transition", pusher });
      const first = track(pub.accepted("r1"));
      const older = track(pub.accepted("r0")); // queued behind r1's push
      const again = track(pub.accepted("r1")); // newest accepted again: its own push covers it
      await tick();
      expect(older.value).toEqual({ kind: "superseded", revision: "r0" });
      expect(pub.pending).toEqual({ revision: "r1", attempts: 0 });
      calls[0]!.resolve({ kind: "failed", detail: "remote down" });
      await tick();
      expect(first.value).toEqual({ kind: "pending", revision: "r1", error: "remote down" });
      expect(again.value).toEqual({ kind: "pending", revision: "r1", error: "remote down" });
      expect(calls.map((c) => c.revision)).toEqual(["r1"]); // r0 was never pushed over the newer r1
      expect(pub.pending).toEqual({ revision: "r1", attempts: 1, lastError: "remote down" });
    },
  );

  it("turn-end: re-accepting the in-flight target reports it pushing and queues nothing behind it", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ pusher, restored: { revision: "r1", attempts: 0 } });
    const retry = pub.retry();
    expect(await pub.accepted("r1")).toEqual({ kind: "pushing", revision: "r1" });
    calls[0]!.resolve({ kind: "pushed" });
    expect(await retry).toEqual({ kind: "pushed", revision: "r1" });
    expect(pub.runEnd()).toEqual({ kind: "idle" }); // nothing queued: no second push of r1
    await pub.settled();
    expect(calls.map((c) => c.revision)).toEqual(["r1"]);
    expect(pub.pending).toBeNull();
  });
});

describe("gitPusher", () => {
  it("asks git for the remote again only when the repository's config changed", async () => {
    let stamp = "s1";
    let remote: string | null = null;
    let asked = 0;
    const pusher = gitPusher({
      pushRevision: async () => ({ kind: "pushed", remote: "origin" }),
      publicationRemote: async () => {
        asked++;
        return remote;
      },
      configStamp: async () => stamp,
    });
    expect(await pusher.hasRemote!()).toBe(false);
    expect(await pusher.hasRemote!()).toBe(false);
    expect(asked).toBe(1);
    remote = "origin";
    stamp = "s2";
    expect(await pusher.hasRemote!()).toBe(true);
    expect(asked).toBe(2);
  });

  it("a local-only driver publishes once a remote is found, from the next accepted cohort on", async () => {
    let remote = false;
    const pushed: string[] = [];
    const pub = createPublication({
      remote: false,
      pusher: {
        push: async (revision) => (pushed.push(revision), { kind: "pushed", remote: "origin" }),
        hasRemote: async () => remote,
      },
    });
    expect(await pub.accepted("r1")).toEqual({ kind: "local-only", revision: "r1" });
    remote = true;
    expect(await pub.accepted("r2")).toEqual({ kind: "queued", revision: "r2" });
    pub.runEnd();
    await pub.settled();
    expect(pushed).toEqual(["r2"]);
  });
});

describe("asking the remote about a restored pending publication (askRestored), in the background", () => {
  const restored = { revision: "r1", attempts: 1, lastError: "offline" };

  it(
    "opening waits for no answer; has → settled, lacks → pushed, " + "unanswered → pending with its cause",
    async () => {
      const answers: Array<[RemoteAnswer, string[], PendingPublication | null]> = [
        [{ kind: "has" }, [], null],
        [{ kind: "lacks" }, ["r1"], restored],
        [
          { kind: "unanswered", detail: "the remote origin did not answer within 10 s" },
          [],
          { ...restored, lastError: "the remote origin did not answer within 10 s" },
        ],
      ];
      for (const [answer, pushes, pending] of answers) {
        const { pusher, calls, asks } = askingPusher();
        const persisted: Array<PendingPublication | null> = [];
        const pub = createPublication({
          pusher,
          restored,
          askRestored: true,
          onPendingChange: (p) => persisted.push(p),
        });
        expect(
          asks.map((a) => a.revision),
          "asked at once, answered later",
        ).toEqual(["r1"]);
        expect(pub.pending, "pending until the remote answers").toEqual(restored);
        expect(await pub.retry()).toEqual({ kind: "checking", revision: "r1" });
        expect(pub.runEnd()).toEqual({ kind: "idle" });
        asks[0]!.answer(answer);
        await tick();
        expect(calls.map((c) => c.revision)).toEqual(pushes);
        expect(pub.pending).toEqual(pending);
        expect(persisted, "a settled target is recorded settled (null); a changed cause is recorded").toEqual(
          answer.kind === "lacks" ? [] : [pending],
        );
        pub.shutdown();
      }
    },
  );

  it(
    "an answer after shutdown, or after a newer accepted target, counts for nothing; " + "shutdown aborts the question",
    async () => {
      const { pusher, calls, asks } = askingPusher();
      const persisted: Array<PendingPublication | null> = [];
      const pub = createPublication({ pusher, restored, askRestored: true, onPendingChange: (p) => persisted.push(p) });
      expect(await pub.accepted("r2")).toEqual({ kind: "queued", revision: "r2" });
      asks[0]!.answer({ kind: "lacks" });
      await tick();
      expect(calls, "r1 is not pushed behind the newer r2's back").toEqual([]);
      expect(pub.runEnd()).toEqual({ kind: "pushing", revision: "r2" });
      calls[0]!.resolve({ kind: "pushed" });
      await pub.settled();

      const again = askingPusher();
      const second = createPublication({ pusher: again.pusher, restored, askRestored: true });
      expect(again.asks[0]!.signal.aborted).toBe(false);
      expect(second.shutdown()).toEqual(restored);
      expect(again.asks[0]!.signal.aborted, "the question is killed").toBe(true);
      again.asks[0]!.answer({ kind: "has" });
      await second.settled();
      expect(again.calls).toEqual([]);
      expect(persisted).toEqual([{ revision: "r2", attempts: 0 }, null]);
    },
  );

  it("transition policy: an activation's accepted cohort is pushed, not waited for (wait: false)", async () => {
    const { pusher, calls } = manualPusher();
    const pub = createPublication({ policy: "transition", pusher });
    expect(await pub.accepted("r1", { wait: false })).toEqual({ kind: "pushing", revision: "r1" });
    expect(calls.map((c) => c.revision)).toEqual(["r1"]);
    const waited = track(pub.accepted("r2"));
    calls[0]!.resolve({ kind: "pushed" });
    await tick();
    expect(waited.done, "a transition's own cohort still waits for its push").toBe(false);
    calls[1]!.resolve({ kind: "pushed" });
    await tick();
    expect(waited.value).toEqual({ kind: "pushed", revision: "r2" });
  });

  it("a remote that already has the restored revision is settled; one that lacks it gets it (real git)", async () => {
    const { backend, commit, remote, root, env } = await gitStore();
    git(root, env, "remote", "add", "origin", remote);
    const r1 = await commit();
    const { pusher, pushed } = counting(gitPusher(backend.remote));
    const first = await openPublication({ pusher, restored: { revision: r1, attempts: 0 }, askRestored: true });
    await first.settled();
    expect(pushed, "the remote lacked it").toEqual([r1]);
    expect(first.pending).toBeNull();
    first.shutdown();
    const second = await openPublication({ pusher, restored: { revision: r1, attempts: 0 }, askRestored: true });
    await second.settled();
    expect(pushed, "the remote has it: not pushed again").toEqual([r1]);
    expect(second.pending).toBeNull();
  });
});
