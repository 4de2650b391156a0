// Real processes killed with SIGKILL at named publication steps (tests/fixtures/publish-child.ts),
// then a fresh process recovers: exactly the old or the new cohort in every scope, the recovery
// step the error names, and a store every session can use again. Real files, real git.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { cwdKey } from "../../store/layout.ts";
import { StateStore, type SessionIdentity } from "../../store/state-store.ts";
import { openStore } from "../../store/open-store.ts";
import { readTemporalState } from "../../core/temporal.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temp = new TempDirs();
afterEach(() => temp.cleanup());

const child = resolve(dirname(fileURLToPath(import.meta.url)), "../fixtures/publish-child.ts");
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
});
