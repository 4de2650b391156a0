// Real processes killed with SIGKILL at named publication steps (tests/fixtures/publish-child.ts),
// then a fresh process recovers: exactly the old or the new cohort in every scope, the recovery
// step the error names, and a store every session can use again. Real files, real git.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { cwdKey } from "../../storage/layout.ts";
import { StateStore, type SessionIdentity } from "../../storage/state-store.ts";
import { openStore } from "../../storage/open-store.ts";
import { readTemporalState } from "../../storage/core/temporal.ts";
import { openGitBackend } from "../../storage/git/git-backend.ts";
import { findGitExecutable } from "../../storage/git/git-runner.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temp = new TempDirs();
afterEach(() => temp.cleanup());

const child = resolve(dirname(fileURLToPath(import.meta.url)), "../fixtures/publish-child.ts");
const gitChild = resolve(dirname(fileURLToPath(import.meta.url)), "git/git-publish-child.ts");
type Mode = "git" | "file";

function environment(mode: Mode): NodeJS.ProcessEnv {
  const cfg = join(temp.make("sf-crashcfg-"), "gitconfig");
  writeFileSync(cfg, "");
  return mode === "git" ? gitTestEnv(cfg) : { ...process.env, PATH: temp.make("sf-nogit-") };
}

function publish(root: string, env: NodeJS.ProcessEnv, mode: Mode, count: number, killAt?: string) {
  const run = spawnSync(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", child, root, mode, "s1", String(count)],
    { env: { ...env, PATH: process.env.PATH, ...(killAt ? { STATE_FLOW_KILL_AT: killAt } : {}) }, encoding: "utf8" },
  );
  const accepted = [...run.stdout.matchAll(/^accepted (\d+)$/gm)].map((m) => Number(m[1]));
  return { signal: run.signal, status: run.status, stderr: run.stderr, accepted };
}

function identity(sessionId: string): SessionIdentity {
  const cwd = "/work/project";
  return { cwd, cwdKey: cwdKey(cwd), sessionId, sessionKey: `2026-11-30T10-00-00-000Z_${sessionId}` };
}

async function stateStore(root: string, env: NodeJS.ProcessEnv, sessionId: string): Promise<StateStore> {
  return new StateStore(await openStore({ root, env }), identity(sessionId));
}

/** working.n of every scope as a fresh process reads the live store (one value = no mixed cohort). */
async function liveN(root: string, env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const runtime = (await (await stateStore(root, env, "s1")).loadCurrent())!;
  const n = (scope: "global" | "cwd" | "session") => readTemporalState(runtime.view, 0, scope).state.working.n;
  return { global: n("global"), cwd: n("cwd"), session: n("session") };
}

/** Does what the lock-held message says: it names a dead owner and the file to remove. */
async function followLockRemedy(root: string, env: NodeJS.ProcessEnv): Promise<string> {
  const error = await (await stateStore(root, env, "s1")).loadCurrent().then(
    () => null,
    (e: Error) => e,
  );
  expect(error?.message).toMatch(/is no longer running on this host.*Remove (\S+) and retry/s);
  const lock = /Remove (\S+) and retry/.exec(error!.message)![1]!;
  rmSync(lock);
  return lock;
}

const GIT = findGitExecutable()!;

/** What a publication may leave: isolated indexes, temp copies, git's locks, journal temp copies. */
function leftovers(root: string): string[] {
  const gitDir = join(root, ".git");
  const locks = ["index.lock", "HEAD.lock", "state-flow-publication.lock", "state-flow-publication.journal"];
  return [
    ...readdirSync(gitDir).filter((name) => name.startsWith("state-flow-index.") || name.endsWith(".tmp")),
    ...locks.filter((name) => existsSync(join(gitDir, name))),
    ...readdirSync(join(gitDir, "refs", "heads")).filter((name) => name.endsWith(".lock")),
    ...tempFiles(root),
  ];
}

function tempFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((p) => /\.sf-\d+-[0-9a-f]+\.tmp$/.test(p));
}

describe("a publisher killed mid-publication", () => {
  it(
    "file-only: a kill during a fold (cwd checkpoint replaced, its tail still a temp copy) " +
      "finishes the new cohort",
    async () => {
      const root = temp.make();
      const env = environment("file");
      expect(publish(root, env, "file", 7).accepted).toEqual([1, 2, 3, 4, 5, 6, 7]);
      // The 8th record folds every scope; renames go global checkpoint, global tail, cwd checkpoint, …
      const killed = publish(root, env, "file", 1, "rename#3");
      expect(killed.signal).toBe("SIGKILL");
      expect(killed.accepted).toEqual([]);
      await followLockRemedy(root, env);
      // A brand-new session can start on the store, and sees the whole new cohort.
      const other = await stateStore(root, env, "s2");
      const started = await other.start(null, "off");
      expect(readTemporalState(started.view, 0, "cwd").state.working.n).toBe(8);
      expect(await liveN(root, env)).toEqual({ global: 8, cwd: 8, session: 8 });
      expect(publish(root, env, "file", 1).accepted).toEqual([9]);
      expect(await liveN(root, env)).toEqual({ global: 9, cwd: 9, session: 9 });
    },
  );

  it("file-only: a kill before the journal leaves exactly the old cohort", async () => {
    const root = temp.make();
    const env = environment("file");
    publish(root, env, "file", 2);
    expect(publish(root, env, "file", 1, "temp.synced#2").signal).toBe("SIGKILL");
    await followLockRemedy(root, env);
    expect(await liveN(root, env)).toEqual({ global: 2, cwd: 2, session: 2 });
    expect(publish(root, env, "file", 1).accepted).toEqual([3]);
  });

  it("git: a kill after the ref moved (HEAD.lock still held) accepts the commit and frees git's locks", async () => {
    const root = temp.make();
    const env = environment("git");
    publish(root, env, "git", 2);
    expect(publish(root, env, "git", 1, "ref.moved#1").signal).toBe("SIGKILL");
    expect(existsSync(join(root, ".git/HEAD.lock"))).toBe(true);
    await followLockRemedy(root, env);
    expect(await liveN(root, env)).toEqual({ global: 3, cwd: 3, session: 3 });
    expect(existsSync(join(root, ".git/HEAD.lock"))).toBe(false);
    expect(git(root, env, "status", "--porcelain", "--untracked-files=no")).toBe("");
    expect(publish(root, env, "git", 1).accepted).toEqual([4]);
    git(root, env, "fsck", "--no-dangling", "--no-progress");
    expect(tempFiles(root)).toEqual([]);
  });

  it("git: a kill with the ref locked but not moved publishes nothing and removes git's ref locks", async () => {
    const root = temp.make();
    const env = environment("git");
    publish(root, env, "git", 2);
    const head = git(root, env, "rev-parse", "HEAD");
    expect(publish(root, env, "git", 1, "ref.locked#1").signal).toBe("SIGKILL");
    const branchLock = join(root, ".git", git(root, env, "symbolic-ref", "HEAD").trim() + ".lock");
    expect(existsSync(branchLock)).toBe(true);
    await followLockRemedy(root, env);
    expect(await liveN(root, env)).toEqual({ global: 2, cwd: 2, session: 2 });
    expect(existsSync(branchLock)).toBe(false);
    expect(existsSync(join(root, ".git/HEAD.lock"))).toBe(false);
    expect(git(root, env, "rev-parse", "HEAD")).toBe(head);
    expect(tempFiles(root)).toEqual([]);
    expect(publish(root, env, "git", 1).accepted).toEqual([3]);
    git(root, env, "fsck", "--no-dangling", "--no-progress");
  });

  it.each(["rename#2", "index.locked#1", "index.installed#1"])(
    "git: a kill at %s after the commit finishes it: " + "files, index and status",
    async (point) => {
      const root = temp.make();
      const env = environment("git");
      publish(root, env, "git", 2);
      expect(publish(root, env, "git", 1, point).signal).toBe("SIGKILL");
      await followLockRemedy(root, env);
      expect(await liveN(root, env)).toEqual({ global: 3, cwd: 3, session: 3 });
      expect(git(root, env, "status", "--porcelain")).toBe("");
      expect(existsSync(join(root, ".git/index.lock"))).toBe(false);
      expect(publish(root, env, "git", 1).accepted).toEqual([4]);
    },
  );

  it.each(["file", "git"] as const)(
    "%s: what State Flow creates is owner-only " + "(directories 0700, files 0600)",
    async (mode) => {
      const root = join(temp.make(), "store");
      const env = environment(mode);
      const previous = process.umask(0o022);
      try {
        publish(root, env, mode, 1);
      } finally {
        process.umask(previous);
      }
      const id = identity("s1");
      for (const dir of [root, join(root, id.cwdKey), join(root, id.cwdKey, id.sessionKey)]) {
        expect(statSync(dir).mode & 0o777, dir).toBe(0o700);
      }
      for (const file of readdirSync(root, { recursive: true, encoding: "utf8" }).filter(
        (p) => !p.startsWith(".git"),
      )) {
        if (statSync(join(root, file)).isFile()) expect(statSync(join(root, file)).mode & 0o777, file).toBe(0o600);
      }
    },
  );

  it.each(["index.staged#1", "temp.synced#2", "ref.locked#1", "ref.moved#1"])(
    "git: after a kill at %s the lock message names git's locks left, and after its one step " +
      "no leftover remains and the user's git works",
    async (point) => {
      const root = temp.make();
      const env = environment("git");
      publish(root, env, "git", 2);
      expect(publish(root, env, "git", 1, point).signal).toBe("SIGKILL");
      // Killed before its journal, the live files are the old cohort: reads go on, a publication meets the lock.
      const backend = (await openGitBackend({ root, binary: GIT, env, generation: "probe" }))!;
      const paths = new StateStore(await openStore({ root, env }), identity("s1")).paths;
      const error = await backend
        .loadCurrent(paths)
        .then((basis) => backend.publish({ basis, writes: new Map([[paths[0]!, basis.files.get(paths[0]!)!]]) }))
        .then(
          () => null,
          (e: Error) => e,
        );
      expect(error).toMatchObject({ code: "lock-held", message: expect.stringMatching(/no longer running/) });
      if (point.startsWith("ref.")) {
        // git's own locks, which make the user's git fail meanwhile, are named with the step that removes them
        expect(error!.message).toMatch(
          /git commands in \S+ fail on the git locks that publication left \(.*index\.lock/,
        );
        expect(error!.message).toContain(join(root, ".git", "HEAD.lock"));
      }
      rmSync(/Remove (\S+) and retry/.exec(error!.message)![1]!);
      expect(publish(root, env, "git", 1).accepted).toHaveLength(1);
      expect(leftovers(root)).toEqual([]);
      git(root, env, "commit", "-q", "--allow-empty", "-m", "the user's own commit");
      git(root, env, "fsck", "--no-dangling", "--no-progress");
    },
  );

  it("git: the recovery-conflict advice resets the index: a file the killed cohort deleted has no entry", async () => {
    const root = temp.make();
    const env = environment("git");
    const id = identity("s1");
    const checkpoint = `${id.cwdKey}/${id.sessionKey}/checkpoint.json`;
    const meta = `${id.cwdKey}/${id.sessionKey}/meta.json`;
    const backend = (await openGitBackend({ root, binary: GIT, env, generation: "t", init: true }))!;
    await backend.publish({
      basis: await backend.loadCurrent([checkpoint, meta]),
      writes: new Map([
        [checkpoint, Buffer.from("one")],
        [meta, Buffer.from("one")],
      ]),
    });
    const killed = spawnSync(
      process.execPath,
      [
        "--experimental-strip-types",
        "--disable-warning=ExperimentalWarning",
        gitChild,
        root,
        JSON.stringify({ [checkpoint]: null, [meta]: "two" }),
      ],
      { env: { ...env, STATE_FLOW_KILL_AT: "ref.moved#1" }, encoding: "utf8" },
    );
    expect(killed.signal).toBe("SIGKILL");
    const cohort = git(root, env, "rev-parse", "HEAD").trim();
    // Someone commits on top with plumbing after removing HEAD.lock, as git's own message suggests.
    rmSync(join(root, ".git", "HEAD.lock"));
    const theirs = git(root, env, "commit-tree", `${cohort}^{tree}`, "-p", cohort, "-m", "someone").trim();
    git(root, env, "update-ref", git(root, env, "symbolic-ref", "HEAD").trim(), theirs);
    const fresh = (await openGitBackend({ root, binary: GIT, env, generation: "fresh" }))!;
    const held = await fresh.loadCurrent([checkpoint, meta]).catch((e: Error) => e);
    rmSync(/Remove (\S+) and retry/.exec((held as Error).message)![1]!);
    const conflict = await fresh.loadCurrent([checkpoint, meta]).catch((e: Error) => e);
    expect(conflict).toMatchObject({ code: "recovery-conflict" });
    const text = (conflict as Error).message;
    const advice = /\b(git (?:-C \S+ )?(?:checkout|restore) [^()]*?-- \.)/.exec(text)![1]!.replace("<commit>", cohort);
    expect(spawnSync("sh", ["-c", advice], { cwd: root, env, encoding: "utf8" }).status).toBe(0);
    rmSync(/then delete (\S+) and retry/.exec(text)![1]!);
    const current = await fresh.loadCurrent([checkpoint, meta]);
    expect(current.files.get(checkpoint)).toBeNull();
    expect(current.files.get(meta)).toEqual(Buffer.from("two"));
    expect(git(root, env, "ls-files")).not.toContain("checkpoint.json");
    expect(git(root, env, "status", "--porcelain", "--untracked-files=no")).toBe("");
    await fresh.publish({ basis: current, writes: new Map([[meta, Buffer.from("three")]]) });
    expect(git(root, env, "status", "--porcelain")).toBe("");
    expect(leftovers(root)).toEqual([]);
  });

  it("git: when the user removed a killed publication's index.lock and staged, recovery keeps that entry", async () => {
    const root = temp.make();
    const env = environment("git");
    const id = identity("s1");
    const meta = `${id.cwdKey}/${id.sessionKey}/meta.json`;
    const backend = (await openGitBackend({ root, binary: GIT, env, generation: "t", init: true }))!;
    writeFileSync(join(root, "notes.md"), "one\n");
    await backend.publish({ basis: await backend.loadCurrent([meta]), writes: new Map([[meta, Buffer.from("one")]]) });
    const args = ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", gitChild, root];
    const killed = spawnSync(process.execPath, [...args, JSON.stringify({ [meta]: "two" })], {
      env: { ...env, STATE_FLOW_KILL_AT: "rename#1" },
    });
    expect(killed.signal).toBe("SIGKILL");
    writeFileSync(join(root, "notes.md"), "staged by the user\n");
    expect(spawnSync("git", ["add", "notes.md"], { cwd: root, env, encoding: "utf8" }).stderr).toMatch(/index\.lock/);
    rmSync(join(root, ".git", "index.lock")); // as git's own message says
    git(root, env, "add", "notes.md");
    const held = await backend.loadCurrent([meta]).catch((e: Error) => e);
    rmSync(/Remove (\S+) and retry/.exec((held as Error).message)![1]!);
    expect((await backend.loadCurrent([meta])).files.get(meta)).toEqual(Buffer.from("two"));
    expect(git(root, env, "status", "--porcelain")).toBe("M  notes.md\n");
    expect(git(root, env, "show", ":notes.md")).toBe("staged by the user\n");
    expect(leftovers(root)).toEqual([]);
  });
});
