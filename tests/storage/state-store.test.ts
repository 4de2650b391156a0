import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StateFlowError } from "../../storage/core/errors.ts";
import { cwdKey, scopeFiles } from "../../storage/layout.ts";
import { acquirePublicationLock } from "../../storage/fs/lock.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../../storage/state-store.ts";
import { StoreError, isStoreError } from "../../storage/store-error.ts";
import { openStore } from "../../storage/open-store.ts";
import { availableOffsets, headBoundary, readTemporalState } from "../../storage/core/temporal.ts";
import { SnapshotOracle, stableStringify } from "../support/oracle.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temp = new TempDirs();
afterEach(() => temp.cleanup());

function identity(sessionId: string, cwd = "/work/project"): SessionIdentity {
  return { cwd, cwdKey: cwdKey(cwd), sessionId, sessionKey: `2026-11-30T10-00-00-000Z_${sessionId}` };
}

async function open(kind: "git" | "file", root: string, id: SessionIdentity): Promise<StateStore> {
  const globalConfig = join(temp.make("sf-gitcfg-"), "gitconfig");
  writeFileSync(globalConfig, "");
  const env = kind === "git" ? gitTestEnv(globalConfig) : { ...process.env, PATH: temp.make("sf-nogit-") };
  const store = await openStore({ root, env, initGit: kind === "git" });
  expect(store.kind).toBe(kind);
  return new StateStore(store, id);
}

describe.each(["git", "file"] as const)("StateStore (%s)", (kind) => {
  it("start establishes an empty session origin and the pointer reloads it", async () => {
    const root = temp.make();
    const store = await open(kind, root, identity("s1"));
    const runtime = await store.start(null, "turn-end");
    expect(runtime.config).toEqual({ version: 1, enabled: true, remotePublication: "turn-end" });
    expect(readTemporalState(runtime.view).state).toEqual({ artifacts: {}, contract: {}, working: {}, response: "" });
    expect(runtime.pointer.revision).toMatch(kind === "git" ? /^[0-9a-f]{40}$/ : /^file:[0-9a-f]{64}$/);
    const reloaded = await store.loadPointer(runtime.pointer);
    expect(reloaded.view).toEqual(runtime.view);
    expect((await store.loadCurrent())!.meta).toEqual(runtime.meta);
  });

  it("ten committed sparse transitions with folding read back at every hot offset", async () => {
    const root = temp.make();
    const store = await open(kind, root, identity("s1"));
    let runtime = await store.start(null, "off");
    const oracle = new SnapshotOracle();
    const pointers: string[] = [];
    for (let i = 1; i <= 10; i++) {
      const patch: Record<string, Record<string, unknown>> = { session: { working: { step: i } } };
      if (i % 3 === 0) patch.cwd = { contract: { [`c${i}`]: i } };
      if (i % 4 === 0) patch.global = { working: { g: i, old: null } };
      runtime = (await store.commit(runtime, patch, `t${i}`)).runtime;
      oracle.apply(patch);
      pointers.push(runtime.pointer.revision);
    }
    const current = (await store.loadCurrent())!;
    expect(availableOffsets(current.view.lineage)).toBe(8);
    for (let offset = 0; offset < 8; offset++) {
      for (const scope of ["effective", "global", "cwd", "session"] as const) {
        expect(stableStringify(readTemporalState(current.view, offset, scope).state), `${offset} ${scope}`).toBe(
          stableStringify(oracle.at(offset, scope)),
        );
      }
    }
    expect(current.view.streams.session.tail).toHaveLength(7);
    if (kind === "git") {
      // Cold reads of older revisions while the worktree holds the newest one.
      const before = git(root, process.env, "status", "--porcelain");
      const third = await store.loadPointer({ revision: pointers[2]! });
      expect(readTemporalState(third.view, 0, "session").state.working).toEqual({ step: 3 });
      expect(readTemporalState(third.view, 0, "cwd").state.contract).toEqual({ c3: 3 });
      expect(git(root, process.env, "status", "--porcelain")).toBe(before);
      expect((await store.loadCurrent())!.view).toEqual(current.view);
    } else {
      await expect(store.loadPointer({ revision: pointers[2]! })).rejects.toMatchObject({
        code: "pointer-unavailable",
      });
    }
  });

  it("stop changes config, not history", async () => {
    const root = temp.make();
    const store = await open(kind, root, identity("s1"));
    let runtime = await store.start(null, "off");
    runtime = (await store.commit(runtime, { session: { working: { a: 1 } } }, "t1")).runtime;
    const stopped = await store.publishConfig(runtime, { ...runtime.config, enabled: false }, "stop");
    expect(stopped.config.enabled).toBe(false);
    expect(stopped.pointer.revision).not.toBe(runtime.pointer.revision);
    expect(stopped.view.lineage).toEqual(runtime.view.lineage);
    expect(stopped.meta.counters).toEqual(runtime.meta.counters);
    const reloaded = await store.loadPointer(stopped.pointer);
    expect(reloaded.view.streams).toEqual(runtime.view.streams);
    const restarted = await store.start(reloaded, "off");
    expect(restarted.config.enabled).toBe(true);
    expect(readTemporalState(restarted.view, 1).state.working).toEqual({});
  });

  it("provenance alone is published like a config change: the global meta.json, no history step", async () => {
    const root = temp.make();
    const store = await open(kind, root, identity("s1"));
    let runtime = await store.start(null, "off");
    const source = "/k/a.md";
    runtime = (await store.commit(runtime, { global: { artifacts: { [source]: { description: "A" } } } }, "t1"))
      .runtime;
    const record = {
      sourceHash: `sha256:${"a".repeat(64)}`,
      compilerRevision: "artifact-v1",
      compiledAt: "2026-12-06T00:00:00.000Z",
    };
    const recorded = await store.publishConfig(runtime, runtime.config, "recompiled", {
      provenance: { global: { [source]: record } },
    });
    expect(recorded.pointer.revision).not.toBe(runtime.pointer.revision);
    expect(recorded.view.lineage).toEqual(runtime.view.lineage);
    const meta = JSON.parse(readFileSync(join(root, "meta.json"), "utf8")) as { artifacts: Record<string, unknown> };
    expect(meta.artifacts[source]).toEqual(record);
    const reloaded = await store.loadPointer(recorded.pointer);
    expect(reloaded.view.streams).toEqual(runtime.view.streams);
  });

  it("discardEmptyStart removes an empty start's session folder in one publication, and nothing more", async () => {
    const root = temp.make();
    const store = await open(kind, root, identity("s1"));
    const started = await store.start(null, "off");
    const stopped = await store.publishConfig(started, { ...started.config, enabled: false }, "stop");
    const folder = await store.discardEmptyStart(stopped);
    expect(folder).toBe(scopeFiles("session", identity("s1")).dir);
    expect(await store.loadCurrent()).toBeNull();
    expect(existsSync(join(root, folder!)), "no empty folder is left either").toBe(false);
    if (kind === "git") {
      const subjects = git(root, process.env, "log", "--format=%s").trim().split("\n");
      expect(subjects.slice(0, 2)).toEqual([expect.stringMatching(/^state-flow: remove session .*s1 /), "stop"]);
      expect(git(root, process.env, "status", "--porcelain")).toBe("");
    }
    // the shared scopes the start wrote stay: they are every session's
    const other = await open(kind, root, identity("s2"));
    expect(await other.start(null, "off")).toBeTruthy();
  });

  it("discardEmptyStart keeps a session with a transition, and one the live store holds differently", async () => {
    const root = temp.make();
    const store = await open(kind, root, identity("s1"));
    const started = await store.start(null, "off");
    const patched = (await store.commit(started, { session: { working: { a: 1 } } }, "t1")).runtime;
    expect(await store.discardEmptyStart(patched)).toBeNull();
    // the branch holds the start, but the live session moved on (another branch of it published)
    expect(await store.discardEmptyStart(started)).toBeNull();
    expect((await store.loadCurrent())!.meta).toEqual(patched.meta);
  });

  it("a session adopts a shared scope another session advanced, and a patch to it is a named conflict", async () => {
    const root = temp.make();
    const a = await open(kind, root, identity("A"));
    let ra = await a.start(null, "off");
    const b = await open(kind, root, identity("B"));
    let rb = await b.start(null, "off");
    rb = (await b.commit(rb, { session: { working: { mine: "B" } } }, "b1")).runtime;
    ra = (await a.commit(ra, { global: { working: { shared: "from A" } } }, "a1")).runtime;
    // B patches only its session: the advanced global is adopted, not overwritten.
    rb = (await b.commit(rb, { session: { working: { next: "B2" } } }, "b2")).runtime;
    expect(readTemporalState(rb.view, 0, "global").state.working).toEqual({ shared: "from A" });
    expect(readTemporalState(rb.view, 0, "session").state.working).toEqual({ mine: "B", next: "B2" });
    expect(availableOffsets(rb.view.lineage)).toBe(2);
    rb = (await b.commit(rb, { global: { working: { shared: "from B" } } }, "b3")).runtime;
    const conflict = await a.commit(ra, { global: { working: { shared: "A again" } } }, "a2").catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(StateFlowError);
    expect((conflict as Error).message).toMatch(/^global: the global scope advanced in another session/);
    expect(readTemporalState((await b.loadCurrent())!.view, 0, "global").state.working).toEqual({ shared: "from B" });
    // Re-reading after the conflict writes nothing and lets the same patch through on the fresh view.
    const before = await b.loadCurrentSnapshot();
    const refreshed = await a.refresh(ra);
    expect(refreshed.pointer).toEqual(ra.pointer);
    expect(readTemporalState(refreshed.view, 0, "global").state.working).toEqual({ shared: "from B" });
    expect((await b.loadCurrentSnapshot()).hashes).toEqual(before.hashes);
    const again = await a.commit(refreshed, { global: { working: { shared: "A again" } } }, "a2");
    expect(readTemporalState(again.runtime.view, 0, "global").state.working).toEqual({ shared: "A again" });
    expect(readTemporalState(again.runtime.view, 1, "global").state.working).toEqual({ shared: "from B" });
  });

  it(
    "finds the cohort accepted on top of the branch's pointer that the branch never recorded, " + "and only that",
    async () => {
      const root = temp.make();
      const store = await open(kind, root, identity("s1"));
      const started = await store.start(null, "off");
      expect(started.meta.predecessor).toBeNull();
      const first = (await store.commit(started, { session: { working: { n: 1 } } }, "t1")).runtime;
      expect(first.meta.predecessor).toBe(started.pointer.revision);
      const second = (
        await store.commit(first, { global: { working: { n: 2 } }, session: { working: { n: 2 } } }, "t2")
      ).runtime;
      const found = await store.unrecordedSuccessor(
        first.pointer.revision,
        new Set([started.pointer.revision, first.pointer.revision]),
      );
      expect(found?.pointer).toEqual(second.pointer);
      expect(found?.view).toEqual(second.view);
      // Recorded on some branch already (e.g. the user went back with /tree): not a lost cohort.
      expect(await store.unrecordedSuccessor(first.pointer.revision, new Set([second.pointer.revision]))).toBeNull();
      // Not the pointer the live cohort was built on.
      expect(await store.unrecordedSuccessor(started.pointer.revision, new Set())).toBeNull();
      // A durable stop is found too (its config says so): the branch then records the stop.
      const stopped = await store.publishConfig(second, { ...second.config, enabled: false }, "stop");
      expect((await store.unrecordedSuccessor(second.pointer.revision, new Set()))?.pointer).toEqual(stopped.pointer);
    },
  );

  it("refuses a session key owned by another session and a cwd key owned by another directory", async () => {
    const root = temp.make();
    const owner = await open(kind, root, identity("A"));
    await owner.start(null, "off");
    const impostor = await open(kind, root, { ...identity("A"), sessionId: "Z" });
    await expect(impostor.loadCurrent()).rejects.toMatchObject({ code: "foreign-identity" });
    const otherCwd = await open(kind, root, { ...identity("C"), cwd: "/work/project-other" });
    const error = await otherCwd.start(null, "off").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toMatch(/is owned by cwd \/work\/project, not cwd \/work\/project-other/);
  });

  it("a partial runtime pair fails closed, naming the missing file", async () => {
    const root = temp.make();
    const id = identity("A");
    const store = await open(kind, root, id);
    await store.start(null, "off");
    const dir = join(root, id.cwdKey, id.sessionKey);
    mkdirSync(dir, { recursive: true });
    const { rmSync } = await import("node:fs");
    rmSync(join(dir, "config.json"));
    if (kind === "git")
      git(root, process.env, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "remove config");
    await expect(store.loadCurrent()).rejects.toThrow(/config\.json is missing while its runtime partner exists/);
  });
});

describe("file-only restore under a held publication lock", () => {
  it("retains the selected pointer (lock-held) instead of judging it unavailable", async () => {
    const root = temp.make();
    const store = await open("file", root, identity("s1"));
    const runtime = await store.start(null, "off");
    writeFileSync(
      store.store.lockPath,
      JSON.stringify({
        pid: 1,
        host: "elsewhere",
        generation: "g",
        purpose: "test",
        createdAt: new Date().toISOString(),
      }),
    );
    await expect(store.loadPointer(runtime.pointer)).rejects.toMatchObject({ code: "lock-held" });
  });
});

describe("two sessions on one file-only store", () => {
  it("a branch's pointer restores over the cwd another session advanced since, and publishes on it", async () => {
    const root = temp.make();
    const a = await open("file", root, identity("A"));
    let ra = await a.start(null, "off");
    ra = (await a.commit(ra, { cwd: { contract: { lang: "ts" } }, session: { working: { mine: "A" } } }, "a1")).runtime;
    const b = await open("file", root, identity("B"));
    const rb = await b.start(null, "off");
    await b.commit(rb, { cwd: { contract: { strict: true } } }, "b1");
    // A reopens: its session files are still the ones its pointer names; cwd is read as it is now.
    const reopened = await open("file", root, identity("A"));
    const restored = await reopened.loadPointer(ra.pointer);
    expect(restored.pointer).toEqual(ra.pointer);
    expect(restored.meta).toEqual(ra.meta);
    expect(readTemporalState(restored.view, 0, "cwd").state.contract).toEqual({ lang: "ts", strict: true });
    expect(readTemporalState(restored.view, 0, "session").state.working).toEqual({ mine: "A" });
    // Nothing was written by the restore, and the branch patches the shared scope it now reads.
    const next = (
      await reopened.commit(restored, { cwd: { contract: { tests: "vitest" } }, session: { working: { n: 2 } } }, "a2")
    ).runtime;
    expect(next.meta.predecessor).toBe(ra.pointer.revision);
    expect(readTemporalState(next.view, 0, "cwd").state.contract).toEqual({
      lang: "ts",
      strict: true,
      tests: "vitest",
    });
    expect((await reopened.loadPointer(next.pointer)).view).toEqual(next.view);
    // Its earlier checkpoint named session files it has since replaced: unavailable, not the current files.
    await expect(reopened.loadPointer(ra.pointer)).rejects.toMatchObject({ code: "pointer-unavailable" });
  });

  it("finds the branch's unrecorded successor although another session changed cwd after it", async () => {
    const root = temp.make();
    const a = await open("file", root, identity("A"));
    const started = await a.start(null, "off");
    const recorded = (await a.commit(started, { session: { working: { n: 1 } } }, "a1")).runtime;
    // Killed after this publication, before Pi recorded it; then B patches cwd.
    const unrecorded = (await a.commit(recorded, { session: { working: { n: 2 } } }, "a2")).runtime;
    const b = await open("file", root, identity("B"));
    await b.commit(await b.start(null, "off"), { cwd: { contract: { by: "B" } } }, "b1");
    const found = await a.unrecordedSuccessor(
      recorded.pointer.revision,
      new Set([started.pointer.revision, recorded.pointer.revision]),
    );
    expect(found?.pointer).toEqual(unrecorded.pointer);
    expect(readTemporalState(found!.view, 0, "session").state.working).toEqual({ n: 2 });
    expect(readTemporalState(found!.view, 0, "cwd").state.contract).toEqual({ by: "B" });
  });
});

describe("a Git store that went file-only while two sessions worked", () => {
  it("a branch restores its file pointer although another session's file-only cwd patch moved cwd too", async () => {
    const root = temp.make();
    const gitA = await open("git", root, identity("A"));
    let a = await gitA.start(null, "off");
    a = (await gitA.commit(a, { cwd: { contract: { lang: "ts" } } }, "a1")).runtime;
    // Git disappears from PATH: A and B keep publishing file-only, so HEAD holds neither's newer files.
    const fileA = await open("file", root, identity("A"));
    a = (await fileA.commit(a, { session: { working: { offline: 1 } } }, "a2")).runtime;
    expect(a.pointer.revision).toMatch(/^file:/);
    const fileB = await open("file", root, identity("B"));
    await fileB.commit(await fileB.start(null, "off"), { cwd: { contract: { strict: true } } }, "b1");
    // Git is back: A's session files are the ones its pointer names, so the diverged live cohort is its state.
    const gitAgain = await open("git", root, identity("A"));
    await expect(gitAgain.loadCurrent()).rejects.toMatchObject({ code: "worktree-diverged" });
    const restored = await gitAgain.loadPointer(a.pointer);
    expect(restored.pointer).toEqual(a.pointer);
    expect(readTemporalState(restored.view, 0, "cwd").state.contract).toEqual({ lang: "ts", strict: true });
    expect(readTemporalState(restored.view, 0, "session").state.working).toEqual({ offline: 1 });
    // The explicit start adopts the complete current files (B's too) with one commit.
    const started = await gitAgain.start(restored, "off");
    expect(started.pointer.revision).toMatch(/^[0-9a-f]{40}$/);
    expect(git(root, process.env, "status", "--porcelain")).toBe("");
    expect(readTemporalState((await gitAgain.loadPointer(started.pointer)).view, 0, "cwd").state.contract).toEqual({
      lang: "ts",
      strict: true,
    });
  });
});

describe('revision "self" in a Git store', () => {
  it(
    '"self" is the last commit owning the config/meta pair: the user\'s own commit and another ' +
      "session's commits after it do not change it; a config-only change does",
    async () => {
      const root = temp.make();
      const id = identity("A");
      const a = await open("git", root, id);
      const started = await a.start(null, "off");
      const recorded = (await a.commit(started, { session: { working: { n: 1 } } }, "a1")).runtime;
      // Killed after this publication, before Pi recorded it: only its "self" names its commit.
      const unrecorded = (await a.commit(recorded, { session: { working: { n: 2 } } }, "a2")).runtime;
      // Unrelated commits follow: the user commits a file of their own in the store repository, and
      // another session starts and patches the shared cwd scope (a member of A's cohort, not of its pair).
      writeFileSync(join(root, "NOTES.md"), "mine\n");
      git(root, process.env, "add", "NOTES.md");
      git(root, process.env, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "my notes");
      const b = await open("git", root, identity("B"));
      await b.commit(await b.start(null, "off"), { cwd: { contract: { by: "B" } } }, "b1");
      const head = git(root, process.env, "rev-parse", "HEAD").trim();
      expect(git(root, process.env, "rev-list", "--count", `${unrecorded.pointer.revision}..HEAD`).trim()).toBe("3");
      const session = scopeFiles("session", id);
      const pair = [session.config!, session.meta];
      // HEAD holds A's pair byte for byte, yet "self" resolves to the commit that wrote it…
      for (const path of pair) {
        expect(git(root, process.env, "show", `HEAD:${path}`)).toBe(readFileSync(join(root, path), "utf8"));
      }
      expect(await a.store.git!.lastCommitOf(pair)).toEqual(unrecorded.pointer);
      // …so the unrecorded cohort is found as that commit, not as HEAD (whose A files read the same).
      const found = await a.unrecordedSuccessor(
        recorded.pointer.revision,
        new Set([started.pointer.revision, recorded.pointer.revision]),
      );
      expect(found?.pointer).toEqual(unrecorded.pointer);
      expect(found?.pointer.revision).not.toBe(head);
      // A config-only change (a stop) owns the pair next: "self" advances, with no semantic step.
      const stopped = await a.publishConfig(found!, { ...found!.config, enabled: false }, "state-flow: stop");
      expect(await a.store.git!.lastCommitOf(pair)).toEqual(stopped.pointer);
      expect(stopped.meta.counters).toEqual(unrecorded.meta.counters);
      // (its lineage starts afresh at step 2: it adopted B's cwd, which left it; no step is added)
      expect(headBoundary(stopped.view.lineage).step).toBe(headBoundary(unrecorded.view.lineage).step);
      expect(readTemporalState(stopped.view, 0, "session").state).toEqual(
        readTemporalState(unrecorded.view, 0, "session").state,
      );
    },
  );
});

describe("file-only store adopted into Git later", () => {
  it(
    "a new session's start adopts the live file cohort into " +
      "Git; the old file pointer still restores while it matches",
    async () => {
      const root = temp.make();
      const fileStore = await open("file", root, identity("A"));
      let a = await fileStore.start(null, "off");
      a = (await fileStore.commit(a, { cwd: { contract: { lang: "ts" } }, session: { working: { mine: "A" } } }, "a1"))
        .runtime;
      const filePointer = a.pointer;
      expect(filePointer.revision).toMatch(/^file:/);
      // Git becomes available: session B starts, which initializes the repository over the files.
      const b = await open("git", root, identity("B"));
      const rb = await b.start(null, "off");
      expect(readTemporalState(rb.view, 0, "cwd").state.contract).toEqual({ lang: "ts" });
      const log = git(root, process.env, "log", "--format=%s").trim().split("\n");
      expect(log).toHaveLength(1);
      expect(git(root, process.env, "show", "--stat", "--format=", "HEAD")).toContain(
        `${identity("A").sessionKey}/checkpoint.json`,
      );
      // A's branch still names its file cohort, which B's start left untouched.
      const gitA = await open("git", root, identity("A"));
      const restored = await gitA.loadPointer(filePointer);
      expect(restored.view).toEqual(a.view);
      expect(restored.pointer.revision).toMatch(/^[0-9a-f]{40}$/);
      // Once A's cohort changes, the old file pointer no longer names current files.
      const next = (await gitA.commit(restored, { session: { working: { later: true } } }, "a2")).runtime;
      expect(next.pointer.revision).toMatch(/^[0-9a-f]{40}$/);
      await expect(gitA.loadPointer(filePointer)).rejects.toMatchObject({ code: "pointer-unavailable" });
    },
  );
});

describe("a Git store that went file-only for a while", () => {
  it(
    "a branch whose file cohort HEAD does not hold restores it " +
      "and adopts it with one commit of the complete current files",
    async () => {
      const root = temp.make();
      const gitA = await open("git", root, identity("A"));
      let a = await gitA.start(null, "off");
      a = (await gitA.commit(a, { cwd: { contract: { lang: "ts" } } }, "a1")).runtime;
      const anchored = a.pointer.revision;
      // Git disappears from PATH: the same branch keeps publishing file-only, so HEAD goes stale.
      const fileA = await open("file", root, identity("A"));
      a = (await fileA.commit(a, { session: { working: { offline: 1 } } }, "a2")).runtime;
      a = (await fileA.commit(a, { cwd: { contract: { lang: "ts", strict: true } } }, "a3")).runtime;
      expect(a.pointer.revision).toMatch(/^file:/);
      // Git is back. Nobody can read the diverged files as current without proof…
      const gitAgain = await open("git", root, identity("A"));
      await expect(gitAgain.loadCurrent()).rejects.toMatchObject({ code: "worktree-diverged" });
      const gitB = await open("git", root, identity("B"));
      await expect(gitB.start(null, "off")).rejects.toMatchObject({ code: "worktree-diverged" });
      // …but A's branch names that exact cohort: it restores, under its file pointer.
      const restored = await gitAgain.loadPointer(a.pointer);
      expect(restored.view).toEqual(a.view);
      expect(restored.pointer).toEqual(a.pointer);
      // An explicit start (nothing changes but the provenance) commits the complete current cohort:
      // one commit, no fabricated history for the file-only transitions.
      const started = await gitAgain.start(restored, "off");
      expect(started.pointer.revision).toMatch(/^[0-9a-f]{40}$/);
      expect(git(root, process.env, "rev-list", "--count", `${anchored}..${started.pointer.revision}`).trim()).toBe(
        "1",
      );
      expect((await gitAgain.loadPointer(started.pointer)).view).toEqual(a.view);
      const next = (await gitAgain.commit(started, { session: { working: { offline: 1, online: true } } }, "a4"))
        .runtime;
      expect(git(root, process.env, "rev-list", "--count", `${anchored}..${next.pointer.revision}`).trim()).toBe("2");
      expect(git(root, process.env, "status", "--porcelain")).toBe("");
      const cold = await gitAgain.loadPointer(next.pointer);
      // the file-only cwd patch
      expect(readTemporalState(cold.view, 0, "cwd").state.contract).toEqual({ lang: "ts", strict: true });
      expect(readTemporalState(cold.view, 1, "session").state.working).toEqual({ offline: 1 }); // hot history kept
      expect(cold.meta.counters.transitions).toBe(a.meta.counters.transitions + 1);
      // and the repository reads as current again, for every session
      expect((await gitAgain.loadCurrent())!.pointer).toEqual(next.pointer);
      await expect(gitB.start(null, "off")).resolves.toMatchObject({ config: { enabled: true } });
    },
  );
});

/**
 * Whether `error` is the named, retryable refusal a live publisher of this process causes: its lock
 * held (the store retries that for about two seconds, which a loaded machine can outlast) or reads
 * that kept overlapping its publications. A session retries it, as its message says.
 */
function liveWriterRefusal(error: unknown): boolean {
  if (!isStoreError(error, "lock-held")) return false;
  const live = new RegExp(
    `held by (?:pid ${process.pid} on .*that process is still running|an owner that released it while we looked)`,
  );
  return live.test(error.message) || /kept publishing while this read ran/.test(error.message);
}

/** Commits `patch`, retrying the refusals another live publisher causes; each refusal is recorded. */
async function commitBeside(
  store: StateStore,
  runtime: BranchState,
  patch: Parameters<StateStore["commit"]>[1],
  reason: string,
  refusals: string[],
): Promise<BranchState> {
  for (;;) {
    try {
      return (await store.commit(runtime, patch, reason)).runtime;
    } catch (error) {
      if (!liveWriterRefusal(error)) throw error;
      refusals.push((error as Error).message);
    }
  }
}

describe.each(["git", "file"] as const)("concurrent publishers on one store (%s)", (kind) => {
  it(
    "sessions publishing at the same time neither fail on " + "each other's half-done publication nor lose a cohort",
    async () => {
      const root = temp.make();
      const a = await open(kind, root, identity("A"));
      const b = await open(kind, root, identity("B"));
      let ra = await a.start(null, "off");
      let rb = await b.start(null, "off");
      const rounds = 12;
      // Whatever the interleaving: the only refusals are the retryable ones the other live session causes
      // (commitBeside rethrows any other), and no cohort is lost.
      const refusals: string[] = [];
      await Promise.all([
        (async () => {
          for (let i = 1; i <= rounds; i++)
            ra = await commitBeside(a, ra, { global: { working: { a: i } } }, `a${i}`, refusals);
        })(),
        (async () => {
          for (let i = 1; i <= rounds; i++)
            rb = await commitBeside(b, rb, { session: { working: { b: i } } }, `b${i}`, refusals);
        })(),
      ]);
      expect(readTemporalState(ra.view, 0, "global").state.working).toEqual({ a: rounds });
      expect(readTemporalState(rb.view, 0, "session").state.working).toEqual({ b: rounds });
      if (kind === "git") {
        // Every cohort is its own commit, and each session's newest revision reads back exactly.
        expect(git(root, process.env, "rev-list", "--count", "HEAD").trim()).toBe(String(2 + 2 * rounds));
        expect(readTemporalState((await b.loadPointer(rb.pointer)).view, 0, "session").state.working).toEqual({
          b: rounds,
        });
        expect(readTemporalState((await a.loadPointer(ra.pointer)).view, 0, "global").state.working).toEqual({
          a: rounds,
        });
      }
    },
  );

  it("a session that meets another live publisher's lock waits for it, then publishes on its cohort", async () => {
    // The collision is made, not hoped for: the test is the other publisher. It holds the store's lock (as
    // a publication does while it is half done) until A's commit has met it, then lets go.
    const root = temp.make();
    const a = await open(kind, root, identity("A"));
    const b = await open(kind, root, identity("B"));
    const ra = await a.start(null, "off");
    const rb = (await b.commit(await b.start(null, "off"), { session: { working: { b: 1 } } }, "b1")).runtime;
    const held = await acquirePublicationLock(a.store.lockPath, { generation: "test", purpose: "test publisher" });
    const met: string[] = [];
    type Call = (...args: unknown[]) => Promise<unknown>;
    const backend = a.store as unknown as Record<"loadCurrent" | "loadRevision" | "publish", Call>;
    for (const name of ["loadCurrent", "loadRevision", "publish"] as const) {
      const real = backend[name].bind(backend);
      backend[name] = (...args) =>
        real(...args).catch((error: unknown) => {
          // Released within this call, before A's store retries: A certainly met the lock, and now gets it.
          if (isStoreError(error, "lock-held") && met.push(error.message) === 1) void held.release();
          throw error;
        });
    }
    const refusals: string[] = [];
    const after = await commitBeside(a, ra, { global: { working: { a: 1 } } }, "a1", refusals);
    expect(met[0]).toMatch(new RegExp(`held by pid ${process.pid} .*test publisher`));
    expect(refusals, "the store's own retry covered the wait").toEqual([]);
    expect(readTemporalState(after.view, 0, "global").state.working).toEqual({ a: 1 });
    // B's next cohort builds on its own and adopts A's global scope: both cohorts stand.
    const next = await commitBeside(b, rb, { session: { working: { b: 2 } } }, "b2", refusals);
    expect(readTemporalState(next.view, 0, "global").state.working).toEqual({ a: 1 });
    expect(readTemporalState(next.view, 1, "session").state.working).toEqual({ b: 1 });
    if (kind === "git") {
      expect(git(root, process.env, "log", "-3", "--format=%s").trim().split("\n")).toEqual(["b2", "a1", "b1"]);
    }
  });
});

describe.each(["git", "file"] as const)("publishing on the runtime's own basis (%s)", (kind) => {
  /** Counts the live-cohort reads a StateStore makes (the backend itself stays real). */
  function countLiveReads(store: StateStore): { count: number } {
    const reads = { count: 0 };
    const backend = store.store;
    const loadCurrent = backend.loadCurrent.bind(backend);
    backend.loadCurrent = (...args) => {
      reads.count++;
      return loadCurrent(...args);
    };
    return reads;
  }

  it("a session's next cohort reads no live cohort first; one another session made stale is read again", async () => {
    const root = temp.make();
    const a = await open(kind, root, identity("a"));
    const b = await open(kind, root, identity("b"));
    let ra = await a.start(null, "off");
    const rb = await b.start(null, "off");
    // (In Git, B's start moved HEAD past A's basis: A's first cohort reads the live one.)
    ra = (await a.commit(ra, { session: { working: { n: 1 } } }, "a1")).runtime;
    const reads = countLiveReads(a);
    ra = (await a.commit(ra, { session: { working: { n: 2 } } }, "a2")).runtime;
    ra = await a.publishConfig(ra, { ...ra.config, remotePublication: "turn-end" }, "config");
    expect(reads.count).toBe(0);
    await b.commit(rb, { global: { working: { by: "B" } } }, "b1");
    const processes = () => a.store.counter.count;
    const before = processes();
    ra = (await a.commit(ra, { session: { working: { n: 3 } } }, "a3")).runtime;
    expect(reads.count).toBe(1);
    // The fresh read resolves B's commit from its loose objects: the cohort's one process is its git add.
    expect(processes() - before).toBe(kind === "git" ? 1 : 0);
    expect(readTemporalState(ra.view).state.working).toEqual({ by: "B", n: 3 });
    expect((await a.loadCurrent())!.view).toEqual(ra.view);
  });

  it("a patch refused on a stale view is decided again on the live one (a conflict, not a no-op)", async () => {
    const root = temp.make();
    const a = await open(kind, root, identity("a"));
    const b = await open(kind, root, identity("b"));
    let ra = await a.start(null, "off");
    let rb = await b.start(null, "off");
    ra = (await a.commit(ra, { global: { working: { x: 1 } } }, "a1")).runtime;
    rb = (await b.commit(rb, { session: { working: { seen: true } } }, "b1")).runtime;
    await b.commit(rb, { global: { working: { x: 2 } } }, "b2");
    // On A's own (stale) view x is already 1: a no-op there, a conflict on the live cohort.
    const refusal = await a.commit(ra, { global: { working: { x: 1 } } }, "a2").catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(StateFlowError);
    expect((refusal as StateFlowError).code).toBe("shared-scope-advanced");
  });

  if (kind === "git") {
    it("a HEAD moved back under unchanged live files is read live, so the divergence is named", async () => {
      const root = temp.make();
      const a = await open(kind, root, identity("a"));
      let ra = await a.start(null, "off");
      ra = (await a.commit(ra, { session: { working: { n: 1 } } }, "a1")).runtime;
      git(root, process.env, "reset", "-q", "--soft", "HEAD~1");
      const refusal = await a.commit(ra, { session: { working: { n: 2 } } }, "a2").catch((e: unknown) => e);
      expect(refusal).toMatchObject({ code: "worktree-diverged" });
      expect(git(root, process.env, "log", "--format=%s").trim().split("\n")[0]).not.toBe("a2");
    });
  }
});
