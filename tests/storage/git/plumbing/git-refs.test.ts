import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  isPlainBranchRef,
  prepareRefUpdate,
  readRefValue,
  type RefCasOptions,
} from "../../../../storage/git/plumbing/git-refs.ts";
import { TempDirs, git, gitTestEnv } from "../../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const ZERO = "0".repeat(40);
const DATE = "1700000000 +0200";

/** The whole update, both halves of prepareRefUpdate, as the Git backend runs it. */
async function compareAndSwapRef(options: RefCasOptions): Promise<void> {
  await (await prepareRefUpdate(options)).commit();
}

/** A repository with two commits (c1, c2) that HEAD's branch does not point to yet (unborn). */
function repo(config: string[] = []) {
  const dir = temps.make("sf-refs-");
  const cfg = join(dir, "..", `${dir.split("/").pop()}.gitconfig`);
  writeFileSync(cfg, "");
  const env = { ...gitTestEnv(cfg), GIT_COMMITTER_DATE: DATE, GIT_AUTHOR_DATE: DATE };
  git(dir, env, "init", "-q");
  for (const setting of config) git(dir, env, "config", ...setting.split("="));
  const tree = git(dir, env, "write-tree").trim();
  const c1 = git(dir, env, "commit-tree", tree, "-m", "one").trim();
  const c2 = git(dir, env, "commit-tree", tree, "-p", c1, "-m", "two").trim();
  const ref = git(dir, env, "symbolic-ref", "HEAD").trim();
  const committer = git(dir, env, "var", "GIT_COMMITTER_IDENT").trim();
  const gitDir = join(dir, ".git");
  const options = (newId: string, oldId: string | null, extra: Partial<RefCasOptions> = {}): RefCasOptions => ({
    gitDir,
    commonDir: gitDir,
    ref,
    newId,
    oldId,
    zeroId: ZERO,
    committer,
    message: "state-flow: accepted cohort",
    logAllRefUpdates: "normal",
    headPointsHere: true,
    ...extra,
  });
  return { dir, env, c1, c2, ref, gitDir, options, cfg };
}

function snapshot(gitDir: string, ref: string) {
  const read = (p: string) => (existsSync(join(gitDir, p)) ? readFileSync(join(gitDir, p), "utf8") : null);
  return {
    ref: read(ref),
    head: read("HEAD"),
    headLog: read("logs/HEAD"),
    refLog: read(`logs/${ref}`),
    locks: readdirSync(join(gitDir, "refs", "heads")).filter((n) => n.endsWith(".lock")),
    headLock: existsSync(join(gitDir, "HEAD.lock")),
  };
}

describe("git refs (in-process compare-and-swap)", () => {
  it("accepts only plain branch names", () => {
    for (const ok of ["refs/heads/main", "refs/heads/feature/x-1", "refs/heads/ü"])
      expect(isPlainBranchRef(ok), ok).toBe(true);
    for (const bad of [
      "HEAD",
      "refs/heads/",
      "refs/tags/x",
      "refs/heads/a..b",
      "refs/heads/.x",
      "refs/heads/x.lock",
      "refs/heads/a b",
      "refs/heads/a//b",
      "refs/heads/x.",
      "refs/heads/a@{b",
      "refs/heads/@",
      "refs/heads/a~1",
      "refs/heads/../../config",
    ]) {
      expect(isPlainBranchRef(bad), bad).toBe(false);
    }
  });

  it("writes exactly what git update-ref writes: ref, branch reflog and HEAD reflog, unborn and born", async () => {
    const ours = repo();
    const theirs = repo();
    expect([theirs.c1, theirs.c2]).toEqual([ours.c1, ours.c2]); // same fixed dates and identity
    await compareAndSwapRef(ours.options(ours.c1, null));
    git(theirs.dir, theirs.env, "update-ref", "-m", "state-flow: accepted cohort", theirs.ref, theirs.c1, ZERO);
    expect(snapshot(ours.gitDir, ours.ref)).toEqual(snapshot(theirs.gitDir, theirs.ref));
    await compareAndSwapRef(ours.options(ours.c2, ours.c1));
    git(theirs.dir, theirs.env, "update-ref", "-m", "state-flow: accepted cohort", theirs.ref, theirs.c2, theirs.c1);
    const after = snapshot(ours.gitDir, ours.ref);
    expect(after).toEqual(snapshot(theirs.gitDir, theirs.ref));
    expect(after.ref).toBe(`${ours.c2}\n`);
    expect(after.headLog?.split("\n")).toHaveLength(3);
    git(ours.dir, ours.env, "fsck", "--strict", "--no-progress");
    expect(git(ours.dir, ours.env, "reflog", "show", "--format=%H %gs").trim().split("\n")).toEqual([
      `${ours.c2} state-flow: accepted cohort`,
      `${ours.c1} state-flow: accepted cohort`,
    ]);
  });

  it("follows core.logAllRefUpdates like git: no reflog created when false, appended when it exists", async () => {
    const ours = repo(["core.logAllRefUpdates=false"]);
    const theirs = repo(["core.logAllRefUpdates=false"]);
    await compareAndSwapRef(ours.options(ours.c1, null, { logAllRefUpdates: "none" }));
    git(theirs.dir, theirs.env, "update-ref", "-m", "state-flow: accepted cohort", theirs.ref, theirs.c1, ZERO);
    expect(snapshot(ours.gitDir, ours.ref)).toEqual(snapshot(theirs.gitDir, theirs.ref));
    expect(existsSync(join(ours.gitDir, "logs", ours.ref))).toBe(false);
    for (const r of [ours, theirs])
      (mkdirSync(join(r.gitDir, "logs"), { recursive: true }), writeFileSync(join(r.gitDir, "logs", "HEAD"), ""));
    await compareAndSwapRef(ours.options(ours.c2, ours.c1, { logAllRefUpdates: "none" }));
    git(theirs.dir, theirs.env, "update-ref", "-m", "state-flow: accepted cohort", theirs.ref, theirs.c2, theirs.c1);
    expect(snapshot(ours.gitDir, ours.ref)).toEqual(snapshot(theirs.gitDir, theirs.ref));
  });

  it("compares against packed refs, and refuses a moved, deleted or already-born ref without touching it", async () => {
    const { dir, env, c1, c2, ref, gitDir, options } = repo();
    // unborn but expected c2
    await expect(compareAndSwapRef(options(c1, c2))).rejects.toMatchObject({ code: "stale-basis", file: ref });
    git(dir, env, "update-ref", ref, c1);
    // exists but expected unborn
    await expect(compareAndSwapRef(options(c2, null))).rejects.toMatchObject({ code: "stale-basis" });
    git(dir, env, "pack-refs", "--all");
    expect(existsSync(join(gitDir, ref))).toBe(false);
    expect(await readRefValue(gitDir, ref, ZERO)).toBe(c1);
    await expect(compareAndSwapRef(options(c1, c2))).rejects.toMatchObject({
      code: "stale-basis",
      message: expect.stringContaining("compare-and-swap failed"),
    });
    expect(git(dir, env, "rev-parse", ref).trim()).toBe(c1);
    await compareAndSwapRef(options(c2, c1)); // packed value is the basis
    expect(git(dir, env, "rev-parse", ref).trim()).toBe(c2);
    const s = snapshot(gitDir, ref);
    expect([s.locks, s.headLock]).toEqual([[], false]);
    git(dir, env, "fsck", "--strict", "--no-progress");
  });

  it(
    "never steals a lock held by git: fails with lock-held " +
      "after git's timeout, leaving the lock and the ref alone",
    async () => {
      const { dir, env, c1, c2, ref, gitDir, options } = repo();
      git(dir, env, "update-ref", ref, c1);
      const held = join(gitDir, `${ref}.lock`);
      writeFileSync(held, "someone else\n");
      // How long it waited is not asserted (a loaded machine only makes it longer); that it waits is, below.
      await expect(compareAndSwapRef(options(c2, c1, { lockTimeoutMs: 50 }))).rejects.toMatchObject({
        code: "lock-held",
        file: held,
        message: expect.stringContaining("waited 50 ms like git"),
      });
      expect(readFileSync(held, "utf8")).toBe("someone else\n");
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(c1);
      rmSync(held);
      // HEAD.lock held: our branch lock is released again
      writeFileSync(join(gitDir, "HEAD.lock"), "x");
      await expect(compareAndSwapRef(options(c2, c1, { lockTimeoutMs: 0 }))).rejects.toMatchObject({
        code: "lock-held",
        file: join(gitDir, "HEAD.lock"),
      });
      expect(existsSync(held)).toBe(false);
      expect(readFileSync(join(gitDir, "HEAD.lock"), "utf8")).toBe("x");
      rmSync(join(gitDir, "HEAD.lock"));
      // A lock released within the timeout is waited for, like git. The call runs synchronously up to its
      // first wait, so when it returns it has found the lock held and is waiting: released only then.
      writeFileSync(held, "");
      const waiting = compareAndSwapRef(options(c2, c1, { lockTimeoutMs: 10_000 }));
      expect(readFileSync(held, "utf8"), "still held: nothing moved yet").toBe("");
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(c1);
      rmSync(held);
      await waiting;
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(c2);
    },
  );

  it(
    "races with real git: git cannot move the ref while we hold " +
      "its lock, and a move by git before our lock is detected",
    async () => {
      const { dir, env, c1, c2, ref, gitDir, options } = repo();
      git(dir, env, "update-ref", ref, c1);
      const prepared = await prepareRefUpdate(options(c2, c1));
      // git respects our lock (its own protocol): update-ref and commit fail, nothing moves
      expect(() => execFileSync("git", ["update-ref", ref, c1], { cwd: dir, env, stdio: "pipe" })).toThrow(
        /cannot lock ref|Unable to create/,
      );
      writeFileSync(join(dir, "f"), "f");
      git(dir, env, "add", "f");
      expect(() => execFileSync("git", ["commit", "-q", "-m", "racing"], { cwd: dir, env, stdio: "pipe" })).toThrow(
        /cannot lock ref|Unable to create|HEAD/,
      );
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(c1);
      await prepared.commit();
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(c2);
      // git moves the ref (a real commit) after our basis was read: compare-and-swap fails, git's commit survives
      git(dir, env, "commit", "-q", "-m", "theirs");
      const theirs = git(dir, env, "rev-parse", ref).trim();
      await expect(compareAndSwapRef(options(c1, c2))).rejects.toMatchObject({ code: "stale-basis" });
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(theirs);
      // an aborted preparation leaves everything as it was
      const aborted = await prepareRefUpdate(options(c1, theirs));
      await aborted.abort();
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(theirs);
      const s = snapshot(gitDir, ref);
      expect([s.locks, s.headLock]).toEqual([[], false]);
      // HEAD switched to another branch meanwhile: refused
      git(dir, env, "symbolic-ref", "HEAD", "refs/heads/other");
      await expect(compareAndSwapRef(options(c1, theirs))).rejects.toMatchObject({
        code: "stale-basis",
        message: expect.stringContaining("HEAD"),
      });
      expect(git(dir, env, "rev-parse", ref).trim()).toBe(theirs);
    },
  );

  it("refuses a ref file that does not hold an object id", async () => {
    const { c1, ref, gitDir, options } = repo();
    writeFileSync(join(gitDir, ref), "ref: refs/heads/elsewhere\n");
    await expect(compareAndSwapRef(options(c1, null))).rejects.toMatchObject({
      code: "git-failed",
      file: join(gitDir, ref),
    });
    expect(readFileSync(join(gitDir, ref), "utf8")).toBe("ref: refs/heads/elsewhere\n");
    expect(snapshot(gitDir, ref).locks).toEqual([]);
  });
});
