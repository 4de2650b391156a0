import { writeFileSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cohortPaths, scopeFiles } from "../../storage/layout.ts";
import { gitInstalled, openStore } from "../../storage/open-store.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const keys = { cwdKey: "--p--", sessionKey: "2026-01-01T00-00-00-000Z_u" };
const paths = cohortPaths(keys);
const meta = scopeFiles("session", keys).meta;

function env(identity = true) {
  const home = temps.make("sf-open-");
  const cfg = join(home, "gitconfig");
  writeFileSync(cfg, "");
  return { home, env: { ...gitTestEnv(cfg, identity), HOME: home } as NodeJS.ProcessEnv };
}

describe("openStore", () => {
  it("uses file-only storage when the git executable is absent (PATH without git)", async () => {
    const { home } = env();
    const noGit = temps.make();
    const store = await openStore({ root: join(home, "state-flow"), env: { PATH: noGit } });
    expect(store.kind).toBe("file");
    expect(store.gitAvailable).toBe(false);
    const r = await store.publish({
      basis: await store.loadCurrent(paths),
      writes: new Map([[meta, Buffer.from("{}")]]),
    });
    expect(r.pointer.revision).toMatch(/^file:[0-9a-f]{64}$/);
    expect((await store.readFile(meta))?.toString()).toBe("{}");
    expect(store.counter.count).toBe(0);
  });

  it("does not initialize Git without an explicit start, but reports that Git is available", async () => {
    const { home, env: e } = env();
    const store = await openStore({ root: join(home, "state-flow"), env: e });
    expect(store.kind).toBe("file");
    expect(store.gitAvailable).toBe(true);
    expect(store.counter.count).toBe(0);
  });

  it("initializes Git on explicit start and checks the identity", async () => {
    const { home, env: e } = env();
    const store = await openStore({ root: join(home, "state-flow"), env: e, initGit: true });
    expect(store.kind).toBe("git");
    expect(store.git).not.toBeNull();
    const { home: h2, env: noIdentity } = env(false);
    await expect(openStore({ root: join(h2, "state-flow"), env: noIdentity, initGit: true })).rejects.toMatchObject({
      code: "git-identity-missing",
    });
  });

  it("opens an existing repository and loads the current view in ≤ 2 git processes", async () => {
    const { home, env: e } = env();
    const root = join(home, "state-flow");
    const first = await openStore({ root, env: e, initGit: true });
    await first.publish({ basis: await first.loadCurrent(paths), writes: new Map([[meta, Buffer.from("{}")]]) });
    const counter = { count: 0 };
    const cold = await openStore({ root, env: e, counter });
    const view = await cold.loadCurrent(paths);
    expect(view.pointer?.revision).toMatch(/^[0-9a-f]{40}$/);
    expect(counter.count).toBeLessThanOrEqual(2);
  });

  it("treats a present but broken git as an error, never as file-only", async () => {
    const { home } = env();
    const bin = temps.make();
    writeFileSync(join(bin, "git"), "#!/bin/sh\necho 'fatal: broken git' >&2\nexit 128\n", { mode: 0o755 });
    const root = join(home, "state-flow");
    mkdirSync(join(root, ".git"), { recursive: true });
    await expect(openStore({ root, env: { PATH: bin } })).rejects.toMatchObject({
      code: "git-failed",
      message: expect.stringContaining("broken git"),
    });
  });

  it("refuses symlinked store files through the store interface", async () => {
    const { home, env: e } = env();
    const root = join(home, "state-flow");
    const store = await openStore({ root, env: e, initGit: true });
    const target = join(home, "elsewhere.json");
    writeFileSync(target, "{}");
    symlinkSync(target, join(root, "meta.json"));
    await expect(store.readFile("meta.json")).rejects.toMatchObject({ code: "symlink-refused" });
  });
});

describe("the publication port", () => {
  async function gitStore() {
    const { home, env: e } = env();
    const root = join(home, "state-flow");
    const counter = { count: 0 };
    const store = await openStore({ root, env: e, initGit: true, counter });
    let n = 0;
    const commit = async () => {
      const basis = await store.loadCurrent(paths);
      return (await store.publish({ basis, writes: new Map([[meta, Buffer.from(`{"n":${++n}}`)]]) })).pointer.revision;
    };
    return { home, env: e, root, counter, store, port: store.publication!, commit };
  }

  it("is there only for a Git store, and keeps each session's pending record", async () => {
    const { home } = env();
    const fileOnly = await openStore({ root: join(home, "state-flow"), env: { PATH: temps.make() } });
    expect(fileOnly.publication).toBeNull();
    const { port, commit } = await gitStore();
    const revision = await commit();
    expect(await port.readPending("session-a")).toBeNull();
    await port.writePending("session-a", { state: "pending", revision, attempts: 1, lastError: "offline" });
    expect(await port.readPending("session-a")).toEqual({
      state: "pending",
      revision,
      attempts: 1,
      lastError: "offline",
    });
    expect(await port.readPending("session-b")).toBeNull();
  });

  it("a linked worktree of the store shares each session's pending record (the common git dir)", async () => {
    const { home, env: e, root, port, commit } = await gitStore();
    const revision = await commit();
    const linked = join(home, "linked");
    git(root, e, "worktree", "add", "-q", "-b", "linked", linked);
    const other = (await openStore({ root: linked, env: e })).publication!;
    await other.writePending("session-a", { state: "pending", revision, attempts: 1, lastError: "offline" });
    expect(await port.readPending("session-a")).toEqual({
      state: "pending",
      revision,
      attempts: 1,
      lastError: "offline",
    });
  });

  it("remoteHas: null without a remote or when it cannot be asked; true for its commit and its ancestors", async () => {
    const { root, env: e, home, port, commit } = await gitStore();
    const first = await commit();
    expect(await port.remote.remoteHas(first), "no remote: local-only").toBeNull();
    const remote = join(home, "remote.git");
    git(root, e, "remote", "add", "origin", remote);
    expect(await port.remote.remoteHas(first), "an unreachable remote cannot be asked").toBeNull();
    git(home, e, "init", "-q", "--bare", remote);
    expect(await port.remote.remoteHas(first), "the remote has no branch yet").toBe(false);
    const second = await commit();
    expect(await port.remote.pushRevision(second)).toMatchObject({ kind: "pushed" });
    expect(await port.remote.remoteHas(second)).toBe(true);
    expect(await port.remote.remoteHas(first), "an ancestor of what the remote has").toBe(true);
    const third = await commit();
    expect(await port.remote.remoteHas(third), "newer than the remote").toBe(false);
  });

  it("the publication remote is read once per config file state", async () => {
    const { root, env: e, counter, port, commit } = await gitStore();
    await commit();
    let before = counter.count;
    expect(await port.remote.publicationRemote()).toBeNull();
    expect(await port.remote.publicationRemote()).toBeNull();
    expect(counter.count - before).toBe(1);
    git(root, e, "remote", "add", "origin", join(root, "nowhere.git"));
    before = counter.count;
    expect(await port.remote.publicationRemote()).toBe("origin");
    expect(counter.count - before).toBe(1);
  });
});

describe("gitInstalled", () => {
  it("looks for git on the given PATH, now", () => {
    expect(gitInstalled(process.env)).toBe(true);
    expect(gitInstalled({ ...process.env, PATH: temps.make() })).toBe(false);
  });
});
