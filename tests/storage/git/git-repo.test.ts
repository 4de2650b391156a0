// The repository handle (git-repo.ts): refs read from their files without a process, the detached
// HEAD it refuses, the commit settings read once (a failure is retried), and the path and pointer rules.
import { lstatSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { gitObjectId } from "../../../storage/git/plumbing/git-objects.ts";
import {
  GitRepo,
  assertGitPath,
  backdateIndex,
  gitBlobId,
  isExecutable,
  isGitPointer,
} from "../../../storage/git/git-repo.ts";
import { gitBackendRepo } from "../../support/git-backend-fixture.ts";
import { TempDirs, git } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

async function handle(options: { identity?: boolean } = {}) {
  const { backend, root, env, counter } = await gitBackendRepo(temps, options);
  return { repo: new GitRepo(backend.info, backend.runner, "t"), root, env, counter };
}

describe("git repository handle", () => {
  it("computes git blob ids", () => {
    expect(gitObjectId("blob", Buffer.from("hello\n"))).toBe("ce013625030ba8dba906f756967f9e9ca394464a");
    expect(gitBlobId(Buffer.from("hello\n"))).toBe("ce013625030ba8dba906f756967f9e9ca394464a");
    expect(gitBlobId(Buffer.from("hello\n"), "sha256")).toMatch(/^[0-9a-f]{64}$/);
  });

  it("reads the branch head from the loose ref or packed-refs without a git process", async () => {
    const { repo, root, env, counter } = await handle();
    const branch = `refs/heads/${git(root, env, "branch", "--show-current").trim()}`;
    let before = counter.count;
    expect(await repo.head()).toEqual({ ref: branch, revision: null }); // unborn
    git(root, env, "commit", "-q", "--allow-empty", "-m", "one");
    const one = git(root, env, "rev-parse", "HEAD").trim();
    expect(await repo.head()).toEqual({ ref: branch, revision: one });
    git(root, env, "pack-refs", "--all");
    expect(await repo.refValue(branch)).toBe(one);
    expect(counter.count - before, "refs read from their files").toBe(0);
    // A ref file it does not understand is left to git.
    writeFileSync(join(root, ".git", "refs", "heads", "odd"), `ref: ${branch}\n`);
    before = counter.count;
    expect(await repo.refValue("refs/heads/odd")).toBe(one);
    expect(counter.count - before).toBe(1);
  });

  it("refuses a detached HEAD and says how to get back on a branch", async () => {
    const { repo, root, env } = await handle();
    git(root, env, "commit", "-q", "--allow-empty", "-m", "one");
    git(root, env, "checkout", "-q", "--detach");
    await expect(repo.headBranch()).rejects.toMatchObject({
      code: "git-failed",
      file: join(root, ".git", "HEAD"),
      message: expect.stringContaining(`is detached`),
    });
    await expect(repo.head()).rejects.toMatchObject({ message: expect.stringContaining("checkout <branch>") });
  });

  it("reads the commit settings once, and again after a failure", async () => {
    const { repo, root, env } = await handle({ identity: false });
    await expect(repo.commitSettings()).rejects.toMatchObject({ code: "git-identity-missing" });
    git(root, env, "config", "user.name", "Someone");
    git(root, env, "config", "user.email", "someone@state-flow.invalid");
    const settings = repo.commitSettings();
    expect(repo.commitSettings()).toBe(settings);
    expect((await settings).author).toMatch(/^Someone <someone@state-flow\.invalid>/);
  });

  it("names what failed when git fails", async () => {
    const { repo } = await handle();
    await expect(repo.git(["cat-file", "-t", "1".repeat(40)], "Probing an object")).rejects.toMatchObject({
      code: "git-failed",
      message: expect.stringMatching(/^Probing an object failed: /),
    });
  });

  it("refuses paths git batch reads cannot express, and tells Git pointers from file pointers", () => {
    expect(() => assertGitPath("a/b.json")).not.toThrow();
    expect(() => assertGitPath("a\nb.json")).toThrow(expect.objectContaining({ code: "invalid-key" }));
    expect(() => assertGitPath("a\rb.json")).toThrow(expect.objectContaining({ code: "invalid-key" }));
    expect(isGitPointer({ revision: "a".repeat(40) })).toBe(true);
    expect(isGitPointer({ revision: "a".repeat(64) })).toBe(true);
    expect(isGitPointer({ revision: "a".repeat(41) })).toBe(false);
    expect(isGitPointer({ revision: `file:${"a".repeat(64)}` })).toBe(false);
    expect(isGitPointer(null)).toBe(false);
  });

  it("backdates a rewritten index 1 µs before its source, and tells executables", async () => {
    const dir = temps.make();
    const [from, to] = [join(dir, "from"), join(dir, "to")];
    writeFileSync(from, "a");
    writeFileSync(to, "b");
    const source = lstatSync(from, { bigint: true });
    backdateIndex(to, source);
    const mtime = lstatSync(to, { bigint: true }).mtimeNs;
    expect(mtime < source.mtimeNs).toBe(true);
    expect(source.mtimeNs - mtime < 1_000_000n).toBe(true); // 1 µs, rounded through a double and the fs
    writeFileSync(join(dir, "run"), "#!/bin/sh\n", { mode: 0o755 });
    expect(await isExecutable(join(dir, "run"))).toBe(true);
    expect(await isExecutable(from)).toBe(false);
    expect(await isExecutable(join(dir, "absent"))).toBe(false);
  });
});
