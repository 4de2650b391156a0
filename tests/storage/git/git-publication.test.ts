// The publication protocol (git-publication.ts): what is staged, the compare-and-swap against the
// basis and the branch, and what a refused publication leaves (nothing).
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { acquirePublicationLock } from "../../../storage/fs/lock.ts";
import { cohortPaths } from "../../../storage/layout.ts";
import { cohort, gitBackendRepo } from "../../support/git-backend-fixture.ts";
import { TempDirs, git, cohortFixture } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const { keys, paths, g, c, s } = cohortFixture();
const repo = () => gitBackendRepo(temps);

describe("git publication", () => {
  it("stages the complete non-ignored worktree delta, respects .gitignore, and overlays exact bytes", async () => {
    const { backend, root, env } = await repo();
    writeFileSync(join(root, ".gitignore"), "ignored.txt\n");
    writeFileSync(join(root, "ignored.txt"), "private");
    writeFileSync(join(root, "notes.md"), "user note");
    writeFileSync(join(root, ".draft.tmp"), "a user's temp-named file is theirs to commit");
    // pid 1 runs: the temp copy cannot be proven a dead publisher's leftover, so it stays (never history)
    writeFileSync(join(root, ".meta.json.sf-1-0123456789ab.tmp"), "a temp copy of a running owner: never history");
    const crlf = Buffer.from("line1\r\nline2\r\n");
    writeFileSync(join(root, ".gitattributes"), "*.json text eol=lf\n");
    const receipt = await backend.publish({
      basis: await backend.loadCurrent(paths),
      writes: new Map([[g.meta, crlf]]),
    });
    const tracked = git(root, env, "ls-tree", "-r", "--name-only", receipt.pointer.revision).trim().split("\n");
    expect(tracked).toEqual([".draft.tmp", ".gitattributes", ".gitignore", "meta.json", "notes.md"]);
    // no filter touched the bytes
    expect((await backend.loadRevision(receipt.pointer, [g.meta])).files.get(g.meta)).toEqual(crlf);
    expect(readFileSync(join(root, g.meta))).toEqual(crlf);
    // a manual deletion is part of the next commit's delta
    git(root, env, "rm", "-q", "--cached", "notes.md");
    writeFileSync(join(root, "notes.md"), "edited");
    const second = await backend.publish({
      basis: await backend.loadCurrent(paths),
      writes: new Map([[g.patches, Buffer.from("")]]),
    });
    expect(git(root, env, "show", `${second.pointer.revision}:notes.md`)).toBe("edited");
    // the eol attribute did not re-stage the earlier cohort's meta.json either
    expect((await backend.loadRevision(second.pointer, [g.meta])).files.get(g.meta)).toEqual(crlf);
    // (git re-checks meta.json through the attribute only while its mtime is in the index's second)
    const status = git(root, env, "status", "--porcelain", "--ignored").replace(/^ M meta\.json\n/m, "");
    expect(status).toBe("?? .meta.json.sf-1-0123456789ab.tmp\n!! ignored.txt\n"); // the stray stays the user's
  });

  it("refuses a stale basis naming the file, and a moved head through CAS", async () => {
    const { backend, root, env } = await repo();
    const base = await backend.loadCurrent(paths);
    await backend.publish({
      basis: base,
      writes: new Map([
        [c.checkpoint, Buffer.from("a")],
        [c.patches, Buffer.from("")],
      ]),
    });
    const error = await backend
      .publish({ basis: base, writes: new Map([[s.meta, Buffer.from("x")]]) })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "stale-basis", file: c.checkpoint });
    expect((error as Error).message).toContain("cwd scope file");
    // another session's commit that did not touch our members is reconciled (head adopted as base)
    const mine = await backend.loadCurrent(paths);
    const otherPaths = cohortPaths({ cwdKey: keys.cwdKey, sessionKey: "other" });
    const other = await backend.loadCurrent(otherPaths);
    await backend.publish({ basis: other, writes: new Map([[`${keys.cwdKey}/other/meta.json`, Buffer.from("o")]]) });
    const ok = await backend.publish({ basis: mine, writes: new Map([[s.meta, Buffer.from("x")]]) });
    expect(git(root, env, "rev-list", "--count", ok.pointer.revision).trim()).toBe("3");
  });

  it("publishes nothing when the ref moves between staging and the compare-and-swap ref update", async () => {
    const { backend, root, env, counter } = await repo();
    const first = await backend.publish({ basis: await backend.loadCurrent(paths), writes: cohort(1) });
    const basis = await backend.loadCurrent(paths);
    // Another writer (not State Flow, so not stopped by the publication lock) moves the branch
    // after our tree was written, before our compare-and-swap.
    const runner = backend.runner;
    const exec = runner.exec.bind(runner);
    let intruder = "";
    runner.exec = async (args, options) => {
      const out = await exec(args, options);
      if (args[0] === "add") {
        const tree = git(root, env, "write-tree").trim();
        intruder = git(root, env, "commit-tree", tree, "-p", first.pointer.revision, "-m", "intruder").trim();
        git(root, env, "update-ref", "refs/heads/" + git(root, env, "branch", "--show-current").trim(), intruder);
      }
      return out;
    };
    const before = counter.count;
    const error = await backend.publish({ basis, writes: cohort(2) }).catch((e: unknown) => e);
    runner.exec = exec;
    expect(counter.count - before).toBe(1); // git add -A; overlay, trees, commit and ref in-process
    expect(error).toMatchObject({ code: "stale-basis", message: expect.stringContaining("compare-and-swap failed") });
    expect(readdirSync(join(root, ".git", "refs", "heads")).filter((n) => n.endsWith(".lock"))).toEqual([]);
    expect(existsSync(join(root, ".git", "HEAD.lock"))).toBe(false);
    expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(intruder); // the other writer's commit survives
    // live files untouched
    for (const [path, bytes] of cohort(1)) expect(readFileSync(join(root, path)), path).toEqual(bytes);
    const stray = git(root, env, "status", "--porcelain", "--untracked-files=all", "--ignored");
    expect(stray).not.toMatch(/\.tmp/); // prepared temp copies removed
    expect(existsSync(backend.lockPath)).toBe(false);
    expect(readdirSync(join(root, ".git")).filter((n) => n.startsWith("state-flow-index."))).toEqual([]);
  });

  it("refuses while the publication lock is held", async () => {
    const { backend } = await repo();
    const base = await backend.loadCurrent(paths);
    const held = await acquirePublicationLock(backend.lockPath, { generation: "crashed-writer" });
    await expect(backend.publish({ basis: base, writes: cohort(1) })).rejects.toMatchObject({
      code: "lock-held",
      file: backend.lockPath,
    });
    await held.release();
    await backend.publish({ basis: base, writes: cohort(1) });
  });
});
