// A machine behind (or diverged from) another, killed with a real SIGKILL at every write step of
// bringing the remote's line in: after the recovery State Flow's own message names, the store is the
// old branch or the new one — every scope's value from one side, never a mix — and the next sync
// reaches the remote's state. Two real stores (publish-child.ts writes real State Flow transitions),
// one bare remote, the sync in a child process (tests/fixtures/sync-child.ts).
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { KILL_POINTS } from "../../storage/fs/crash-points.ts";
import { cwdKey } from "../../storage/layout.ts";
import { openStore } from "../../storage/open-store.ts";
import { readTemporalState } from "../../storage/core/temporal.ts";
import { StateStore } from "../../storage/state-store.ts";
import { TempDirs, git, gitTestEnv } from "../support/store-fixtures.ts";

const temps = new TempDirs();
afterAll(() => temps.cleanup());
const here = dirname(fileURLToPath(import.meta.url));
const publishChild = resolve(here, "../fixtures/publish-child.ts");
const syncChild = resolve(here, "../fixtures/sync-child.ts");
const node = (args: string[], env: NodeJS.ProcessEnv) =>
  spawnSync(process.execPath, ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", ...args], {
    env: { ...env, PATH: process.env.PATH },
    encoding: "utf8",
  });

/** The steps of a fast-forward and a join (the Git publication's; the Pi adapter's are not reached). */
const POINTS = KILL_POINTS.filter((point) => !point.startsWith("branch."));

function environment(): NodeJS.ProcessEnv {
  const cfg = join(temps.make("sf-sync-crash-cfg-"), "gitconfig");
  writeFileSync(cfg, "");
  return gitTestEnv(cfg);
}

/** working.n of every scope as a fresh reader sees the live store (one value = no mixed cohort). */
async function liveN(root: string, env: NodeJS.ProcessEnv): Promise<number[]> {
  const cwd = "/work/project";
  const sessionId = "s1";
  const identity = { cwd, cwdKey: cwdKey(cwd), sessionId, sessionKey: `2026-11-30T10-00-00-000Z_${sessionId}` };
  const runtime = (await new StateStore(await openStore({ root, env }), identity).loadCurrent())!;
  return (["global", "cwd", "session"] as const).map((s) =>
    Number(readTemporalState(runtime.view, 0, s).state.working.n),
  );
}

/** Does what a lock-held message says when its owner is gone: removes the named lock file. */
async function followLockRemedy(root: string, env: NodeJS.ProcessEnv): Promise<void> {
  const store = await openStore({ root, env });
  const error = await store.loadCurrent(["meta.json"]).then(
    () => null,
    (e: Error) => e,
  );
  if (error === null) return;
  const lock = /Remove (\S+) and retry/.exec(error.message)?.[1];
  if (!lock) throw error;
  rmSync(lock);
}

/** A behind by 3 transitions of machine A, both on one bare remote; returns B's root and both heads. */
function behindPair(env: NodeJS.ProcessEnv) {
  const a = join(temps.make("sf-sync-crash-a-"), "state-flow");
  const bare = temps.make("sf-sync-crash-bare-");
  git(bare, env, "init", "-q", "--bare");
  expect(node([publishChild, a, "git", "s1", "1"], env).status).toBe(0);
  git(a, env, "remote", "add", "origin", bare);
  git(a, env, "push", "-q", "origin", "HEAD");
  const b = join(temps.make("sf-sync-crash-b-"), "state-flow");
  git(dirname(b), env, "clone", "-q", bare, b);
  const old = git(b, env, "rev-parse", "HEAD").trim();
  expect(node([publishChild, a, "git", "s1", "3"], env).status).toBe(0);
  git(a, env, "push", "-q", "origin", "HEAD");
  return { b, old, next: git(a, env, "rev-parse", "HEAD").trim() };
}

describe("sync under SIGKILL: old or new, never mixed, and the next sync gets there", () => {
  const env = environment();
  for (const point of POINTS) {
    it(`a fast-forward killed at ${point}`, async () => {
      const { b, old, next } = behindPair(env);
      const killed = node([syncChild, b], { ...env, STATE_FLOW_KILL_AT: `${point}#1` });
      expect(killed.stdout).toMatch(/^standing behind$/m);
      // A point a fast-forward never reaches (the commit object: the remote's own is reused) lets it finish.
      if (killed.signal !== "SIGKILL") expect(killed.stdout).toMatch(new RegExp(`^synced ${next}$`, "m"));
      await followLockRemedy(b, env);
      const head = git(b, env, "rev-parse", "HEAD").trim();
      expect([old, next]).toContain(head);
      expect(await liveN(b, env)).toEqual(head === old ? [1, 1, 1] : [4, 4, 4]);
      let again = node([syncChild, b], env);
      // Killed holding the publication lock: the refusal names the lock of a process that is gone; doing
      // what it says works.
      const remedy = /Remove (\S+) and retry/.exec(again.stderr)?.[1];
      if (again.status !== 0 && remedy) {
        expect(again.stderr).toMatch(/is no longer running on this host/);
        rmSync(remedy);
        again = node([syncChild, b], env);
      }
      expect(again.status, again.stderr).toBe(0);
      expect(git(b, env, "rev-parse", "HEAD").trim()).toBe(next);
      expect(await liveN(b, env)).toEqual([4, 4, 4]);
      expect(git(b, env, "status", "--porcelain")).toBe("");
    });
  }
});
