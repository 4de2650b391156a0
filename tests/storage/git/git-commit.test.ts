// The commit of a publication (git-commit.ts): the overlay and the trees in-process or by git, the
// commit object byte-identical to git's, and git's own commands where in-process would not be exact.
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openGitBackend } from "../../../storage/git/git-backend.ts";
import { GIT, cohort, gitBackendRepo } from "../../support/git-backend-fixture.ts";
import { TempDirs, git, cohortFixture } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const { keys, paths, g, s } = cohortFixture();
const repo = () => gitBackendRepo(temps);

describe("git commit", () => {
  it(
    "overlays and writes trees in-process (one git process), leaving git's " +
      "own view of the index clean; falls back to git where the index is unusual",
    async () => {
      const { backend, root, env, counter } = await repo();
      mkdirSync(join(root, "docs"), { recursive: true });
      writeFileSync(join(root, "docs", "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
      const first = await backend.publish({ basis: await backend.loadCurrent(paths), writes: cohort(1) });
      const check = (revision: string) => {
        expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(revision);
        // the caller's index is HEAD
        expect(git(root, env, "write-tree").trim()).toBe(git(root, env, "rev-parse", "HEAD^{tree}").trim());
        expect(git(root, env, "status", "--porcelain", "--untracked-files=all")).toBe("");
        git(root, env, "fsck", "--strict", "--no-progress");
      };
      check(first.pointer.revision);
      expect(git(root, env, "ls-tree", "-r", first.pointer.revision, "docs/run.sh")).toMatch(/^100755 /);
      // objects packed away by gc (the trees this backend remembers stay reachable from HEAD)
      git(root, env, "gc", "-q", "--prune=now");
      const basis = await backend.loadCurrent(paths);
      let before = counter.count;
      const second = await backend.publish({
        basis,
        writes: new Map([
          [s.meta, Buffer.from("two")],
          [g.patches, null],
        ]),
      });
      expect(counter.count - before).toBe(1);
      check(second.pointer.revision);
      expect(git(root, env, "ls-tree", "-r", "--name-only", second.pointer.revision).split("\n")).not.toContain(
        g.patches,
      );
      // a version 4 index (feature.manyFiles) stays version 4, still in-process
      git(root, env, "update-index", "--index-version", "4");
      before = counter.count;
      const third = await backend.publish({
        basis: await backend.loadCurrent(paths),
        writes: new Map([[s.meta, Buffer.from("three")]]),
      });
      // the read verifies against the blobs of the cohort just committed (HEAD still names it): no process
      expect(counter.count - before).toBe(1); // add
      check(third.pointer.revision);
      expect(readFileSync(join(root, ".git", "index")).readUInt32BE(4)).toBe(4);
      // an index git-index.ts does not handle (a skip-worktree entry): git's update-index + write-tree, same result
      git(root, env, "update-index", "--skip-worktree", "docs/run.sh");
      before = counter.count;
      const fourth = await backend.publish({
        basis: await backend.loadCurrent(paths),
        writes: new Map([[s.meta, Buffer.from("four")]]),
      });
      expect(counter.count - before).toBe(3); // add, update-index, write-tree
      check(fourth.pointer.revision);
      expect(git(root, env, "show", `${fourth.pointer.revision}:${s.meta}`)).toBe("four");
      expect(git(root, env, "ls-files", "-t", "docs/run.sh")).toBe("S docs/run.sh\n"); // git's own path kept the flag
    },
  );

  it(
    "in a large store, learns the trees from git's write-tree " +
      "once, then rehashes and writes only the touched paths",
    async () => {
      const { root, env, counter } = await repo();
      // 300 other sessions' files, committed and packed by gc (trees not loose)
      for (let n = 0; n < 100; n++) {
        mkdirSync(join(root, keys.cwdKey, `other-${n}`), { recursive: true });
        for (const f of ["checkpoint.json", "patches.jsonl", "meta.json"])
          writeFileSync(join(root, keys.cwdKey, `other-${n}`, f), `${n} ${f}\n`);
      }
      git(root, env, "add", "-A");
      git(root, env, "commit", "-q", "-m", "others");
      git(root, env, "gc", "-q", "--prune=now");
      const fresh = (await openGitBackend({ root, binary: GIT, env, counter, generation: "fresh" }))!;
      await fresh.checkIdentity();
      const looseObjects = () =>
        readdirSync(join(root, ".git", "objects"))
          .filter((d) => /^[0-9a-f]{2}$/.test(d))
          .flatMap((d) => readdirSync(join(root, ".git", "objects", d)));
      let basis = await fresh.loadCurrent(paths);
      let before = counter.count;
      const first = await fresh.publish({ basis, writes: cohort(1) });
      expect(counter.count - before).toBe(3); // add, update-index, write-tree: no known trees yet
      basis = await fresh.loadCurrent(paths);
      const loose = new Set(looseObjects());
      before = counter.count;
      const second = await fresh.publish({ basis, writes: new Map([[s.meta, Buffer.from("two")]]) });
      expect(counter.count - before).toBe(1);
      // new objects: one blob, the trees on the session's path (session dir, cwd dir, root) and the commit
      expect(looseObjects().filter((o) => !loose.has(o))).toHaveLength(1 + 3 + 1);
      for (const revision of [first.pointer.revision, second.pointer.revision])
        expect(git(root, env, "ls-tree", "-r", "--name-only", revision).split("\n").filter(Boolean)).toHaveLength(
          300 + cohort(1).size,
        );
      expect(git(root, env, "write-tree").trim()).toBe(git(root, env, "rev-parse", "HEAD^{tree}").trim());
      expect(git(root, env, "status", "--porcelain")).toBe("");
      git(root, env, "fsck", "--strict", "--no-progress");
    },
  );

  it(
    "leaves object writing to git in a shared repository (group " +
      "permissions); core.fsync=objects keeps the one-process path",
    async () => {
      const { root, env, counter } = await repo();
      git(root, env, "config", "core.sharedRepository", "group");
      const shared = (await openGitBackend({ root, binary: GIT, env, counter, generation: "shared" }))!;
      const before = counter.count;
      const receipt = await shared.publish({ basis: await shared.loadCurrent(paths), writes: cohort(1) });
      // loadCurrent + git config reads (identity, config) + add + one hash-object per blob + update-index
      // + write-tree + commit-tree + update-ref
      expect(counter.count - before).toBe(1 + 3 + 1 + cohort(1).size + 2 + 2);
      const objects = join(root, ".git", "objects");
      for (const dir of readdirSync(objects).filter((d) => /^[0-9a-f]{2}$/.test(d))) {
        expect(statSync(join(objects, dir)).mode & 0o2070, `${dir} is group-writable and setgid, as git makes it`).toBe(
          0o2070,
        );
      }
      expect(git(root, env, "status", "--porcelain")).toBe("");
      git(root, env, "fsck", "--strict", "--no-progress");
      expect(receipt.committed).toBe(true);
      // core.fsync=objects: the in-process path stays in use (one process) and still commits exactly
      git(root, env, "config", "--unset", "core.sharedRepository");
      git(root, env, "config", "core.fsync", "objects");
      const fsyncing = (await openGitBackend({ root, binary: GIT, env, counter, generation: "fsync" }))!;
      await fsyncing.checkIdentity();
      const basis = await fsyncing.loadCurrent(paths);
      const count = counter.count;
      const next = await fsyncing.publish({ basis, writes: cohort(2) });
      expect(counter.count - count).toBe(1);
      expect(git(root, env, "show", `${next.pointer.revision}:${s.meta}`)).toBe(cohort(2).get(s.meta)!.toString());
    },
  );

  it(
    "commits in-process exactly like git (identity from git, fixed dates honoured, " +
      "reflogs, fsck), and takes git's own path where that would not be exact",
    async () => {
      const { backend, root, env, counter } = await repo();
      const dated = { ...env, GIT_AUTHOR_DATE: "1700000000 +0130", GIT_COMMITTER_DATE: "1700000100 -0500" };
      const fixed = (await openGitBackend({ root, binary: GIT, env: dated, counter, generation: "dated" }))!;
      await fixed.checkIdentity();
      const before = counter.count;
      const first = await fixed.publish({
        basis: await fixed.loadCurrent(paths),
        writes: cohort(1),
        message: "cohort one",
      });
      expect(counter.count - before).toBe(1 + 1); // loadCurrent + add (overlay, trees, commit, ref in-process)
      const tree = git(root, env, "rev-parse", `${first.pointer.revision}^{tree}`).trim();
      // byte-identical to git
      expect(git(root, dated, "commit-tree", tree, "-m", "cohort one").trim()).toBe(first.pointer.revision);
      const second = await backend.publish({ basis: await backend.loadCurrent(paths), writes: cohort(2) });
      const text = git(root, env, "cat-file", "commit", second.pointer.revision);
      expect(text).toContain(`parent ${first.pointer.revision}\n`);
      expect(text).toMatch(/^author State Flow Test <test@state-flow\.invalid> \d+ [+-]\d{4}$/m);
      expect(git(root, env, "reflog", "show", "--format=%H %gs").trim().split("\n")).toEqual([
        `${second.pointer.revision} state-flow: accepted cohort`,
        `${first.pointer.revision} state-flow: accepted cohort`,
      ]);
      git(root, env, "fsck", "--strict", "--no-progress");
      // a reference-transaction hook must run: git's own commit-tree + update-ref (3 processes)
      const hook = join(root, ".git", "hooks", "reference-transaction");
      writeFileSync(hook, `#!/bin/sh\necho "$1" >> "${join(root, ".git", "hook.log")}"\n`, { mode: 0o755 });
      const basis = await backend.loadCurrent(paths);
      const count = counter.count;
      const third = await backend.publish({ basis, writes: cohort(3) });
      expect(counter.count - count).toBe(3);
      expect(readFileSync(join(root, ".git", "hook.log"), "utf8")).toBe("prepared\ncommitted\n");
      expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(third.pointer.revision);
      expect(git(root, env, "status", "--porcelain")).toBe("");
    },
  );
});
