// Recovery of a publication a real child process was SIGKILLed in (git-publish-child.ts), called
// directly: finished when the ref names the journal's commit, discarded while it is still the base,
// refused by name when someone moved it since. Real files, real git.

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { JOURNAL_FILE_NAME } from "../../../storage/fs/journal.ts";
import { LOCK_FILE_NAME } from "../../../storage/fs/lock.ts";
import { explainLockHeld, finishInterruptedPublication, type RecoveryRepo } from "../../../storage/git/git-recovery.ts";
import { StoreError } from "../../../storage/store-error.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const child = resolve(dirname(fileURLToPath(import.meta.url)), "git-publish-child.ts");

/** A store repository with a.txt committed, and a RecoveryRepo over it answered by the git CLI. */
function store() {
  const root = temps.make("sf-recovery-");
  const config = join(temps.make("sf-recovery-cfg-"), "gitconfig");
  writeFileSync(config, "");
  const env = gitTestEnv(config);
  git(root, env, "init", "-q", "-b", "main");
  writeFileSync(join(root, "a.txt"), "old\n");
  git(root, env, "add", "a.txt");
  git(root, env, "commit", "-q", "-m", "base");
  const gitDir = join(root, ".git");
  const repo: RecoveryRepo = {
    root,
    info: { gitDir, commonDir: gitDir, objectFormat: "sha1" },
    journalPath: join(gitDir, JOURNAL_FILE_NAME),
    lockPath: join(gitDir, LOCK_FILE_NAME),
    refValue: async (ref) => {
      try {
        return git(root, env, "rev-parse", "--verify", "-q", ref).trim();
      } catch {
        return null;
      }
    },
    headBranch: async () => git(root, env, "symbolic-ref", "HEAD").trim(),
    git: async (args, _what, extra, input) =>
      spawnSync("git", args, { cwd: root, env: { ...env, ...extra }, input, encoding: "utf8" }).stdout,
  };
  /** Publishes a.txt = text in a child killed at `killAt`; returns how it ended. */
  const killedPublish = (text: string, killAt: string) =>
    spawnSync(
      process.execPath,
      [
        "--experimental-strip-types",
        "--disable-warning=ExperimentalWarning",
        child,
        root,
        JSON.stringify({ "a.txt": text }),
      ],
      { env: { ...env, STATE_FLOW_KILL_AT: killAt }, encoding: "utf8" },
    );
  return { root, env, gitDir, repo, killedPublish, head: () => git(root, env, "rev-parse", "HEAD").trim() };
}

describe("git recovery", () => {
  it("does nothing without a journal", async () => {
    const { repo, head, root } = store();
    const before = head();
    await finishInterruptedPublication(repo);
    expect([head(), readFileSync(join(root, "a.txt"), "utf8")]).toEqual([before, "old\n"]);
  });

  it("finishes a publication killed after its ref moved: files, index and git locks follow the commit", async () => {
    const { repo, root, env, gitDir, killedPublish, head } = store();
    const base = head();
    expect(killedPublish("new\n", "ref.moved#1").signal).toBe("SIGKILL");
    expect(head()).not.toBe(base);
    expect(existsSync(join(gitDir, "HEAD.lock")) || existsSync(join(gitDir, "index.lock"))).toBe(true);
    await finishInterruptedPublication(repo);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("new\n");
    expect(git(root, env, "status", "--porcelain")).toBe("");
    expect(["HEAD.lock", "index.lock", JOURNAL_FILE_NAME].filter((f) => existsSync(join(gitDir, f)))).toEqual([]);
  });

  it("discards a publication killed before its ref moved: the old commit, file and index stay", async () => {
    const { repo, root, env, gitDir, killedPublish, head } = store();
    const base = head();
    expect(killedPublish("new\n", "journal.written#1").signal).toBe("SIGKILL");
    expect(existsSync(repo.journalPath)).toBe(true);
    await finishInterruptedPublication(repo);
    expect([head(), readFileSync(join(root, "a.txt"), "utf8")]).toEqual([base, "old\n"]);
    expect(git(root, env, "status", "--porcelain")).toBe("");
    expect(
      ["index.lock", "refs/heads/main.lock", JOURNAL_FILE_NAME].filter((f) => existsSync(join(gitDir, f))),
    ).toEqual([]);
  });

  it("refuses by name when someone moved the ref since, and changes nothing", async () => {
    const { repo, root, env, killedPublish, head } = store();
    expect(killedPublish("new\n", "journal.written#1").signal).toBe("SIGKILL");
    const journal = readFileSync(repo.journalPath);
    // git add would wait on the index.lock the killed publication holds; plumbing moves the branch.
    const commit = git(root, env, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "user commit").trim();
    git(root, env, "update-ref", "refs/heads/main", commit);
    const moved = head();
    await expect(finishInterruptedPublication(repo)).rejects.toMatchObject({
      code: "recovery-conflict",
      message: expect.stringContaining(`git -C ${root} restore --source=<commit> --staged --worktree -- .`),
    });
    expect([head(), readFileSync(repo.journalPath).equals(journal)]).toEqual([moved, true]);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("old\n");
  });

  it("explains a dead publisher's lock with the git locks it left, and passes other errors through", async () => {
    const { repo, gitDir, killedPublish } = store();
    const other = new Error("unrelated");
    expect(await explainLockHeld(repo, other)).toBe(other);
    expect(killedPublish("new\n", "ref.moved#1").signal).toBe("SIGKILL");
    const held = new StoreError("lock-held", "The publication lock is held by a process that is gone.", {
      file: repo.lockPath,
    });
    const explained = (await explainLockHeld(repo, held)) as StoreError;
    expect(explained).toMatchObject({ code: "lock-held", file: repo.lockPath });
    expect(explained.message).toContain(join(gitDir, "HEAD.lock"));
    expect(explained.message).toMatch(/Do not delete them by hand/);
  });
});
