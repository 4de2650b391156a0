import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitBackend, openGitBackend } from "../../../storage/git/git-backend.ts";
import { gitObjectId } from "../../../storage/git/plumbing/git-objects.ts";
import { findGitExecutable } from "../../../storage/git/git-runner.ts";
import { legacyFilePointerOf } from "../../../storage/cohort-basis.ts";
import { cohortPaths } from "../../../storage/layout.ts";
import { acquirePublicationLock } from "../../../storage/fs/lock.ts";
import { openStore, type CohortSnapshot } from "../../../storage/open-store.ts";
import { TempDirs, git, gitTestEnv, cohortFixture } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const { keys, paths, g, c, s } = cohortFixture();
const GIT = findGitExecutable()!;

async function repo(options: { identity?: boolean } = {}) {
  const home = temps.make("sf-git-");
  const cfg = join(home, "gitconfig");
  writeFileSync(cfg, "");
  const env: NodeJS.ProcessEnv = { ...gitTestEnv(cfg, options.identity ?? true), HOME: home };
  const root = join(home, "state-flow");
  const counter = { count: 0 };
  const backend = (await openGitBackend({ root, binary: GIT, env, counter, generation: "test", init: true }))!;
  return { root, env, counter, backend, home };
}

function cohort(n: number, size = 64): Map<string, Buffer> {
  const pad = (tag: string) => Buffer.from(`{"n":${n},"tag":"${tag}","pad":"${"x".repeat(size)}"}\n`);
  return new Map([
    [g.checkpoint, pad("gc")],
    [g.patches, pad("gp")],
    [g.meta, pad("gm")],
    [c.checkpoint, pad("cc")],
    [c.patches, pad("cp")],
    [s.checkpoint, pad("sc")],
    [s.patches, pad("sp")],
    [s.meta, pad("sm")],
  ]);
}

describe("git backend", () => {
  it("detects git, and reports absence only when the executable is absent", async () => {
    const root = temps.make();
    expect(await openStore({ root })).toMatchObject({ gitAvailable: true });
    const empty = temps.make();
    expect(await openStore({ root, env: { PATH: empty } })).toMatchObject({ kind: "file", gitAvailable: false });
    const missingBinary = await openStore({ root, gitBinary: join(empty, "git") });
    expect(missingBinary).toMatchObject({ kind: "file", gitAvailable: false });
    // A present but failing "git" is an error, not absence (it runs once a repository is there to open).
    const fake = join(empty, "git");
    writeFileSync(fake, "#!/bin/sh\necho broken >&2\nexit 3\n", { mode: 0o755 });
    mkdirSync(join(root, ".git"));
    await expect(openStore({ root, env: { PATH: empty } })).rejects.toMatchObject({ code: "git-failed" });
  });

  it("computes git blob ids", () => {
    expect(gitObjectId("blob", Buffer.from("hello\n"))).toBe("ce013625030ba8dba906f756967f9e9ca394464a");
  });

  it("initializes an exact-root repository over a populated directory without deleting files", async () => {
    const home = temps.make();
    const cfg = join(home, "gitconfig");
    writeFileSync(cfg, "");
    const env = gitTestEnv(cfg);
    const root = join(home, "state-flow");
    mkdirSync(join(root, keys.cwdKey), { recursive: true });
    writeFileSync(join(root, "checkpoint.json"), "kept");
    writeFileSync(join(root, keys.cwdKey, "meta.json"), "kept too");
    expect(await openGitBackend({ root, binary: GIT, env, generation: "t", init: false })).toBeNull();
    const backend = await openGitBackend({ root, binary: GIT, env, generation: "t", init: true });
    expect(backend).toBeInstanceOf(GitBackend);
    expect(readFileSync(join(root, "checkpoint.json"), "utf8")).toBe("kept");
    expect(existsSync(join(root, ".git"))).toBe(true);
    // A store nested inside another repository is given its own exact-root repository.
    const outer = temps.make();
    git(outer, env, "init", "-q");
    const nested = join(outer, "agent", "state-flow");
    expect(await openGitBackend({ root: nested, binary: GIT, env, generation: "t", init: false })).toBeNull();
    const own = await openGitBackend({ root: nested, binary: GIT, env, generation: "t", init: true });
    expect(own?.info.gitDir).toBe(join(nested, ".git"));
  });

  it("refuses to invent a commit identity and says what to configure", async () => {
    const { backend, env, root } = await repo({ identity: false });
    expect(env.GIT_CONFIG_NOSYSTEM).toBe("1");
    await expect(backend.checkIdentity()).rejects.toMatchObject({
      code: "git-identity-missing",
      message: expect.stringContaining("git config --global user.name"),
    });
    const base = await backend.loadCurrent(paths);
    const error = await backend.publish({ basis: base, writes: cohort(1) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "git-identity-missing", message: expect.stringContaining("user.email") });
    expect(existsSync(join(root, g.checkpoint))).toBe(false); // nothing written
    expect(existsSync(backend.lockPath)).toBe(false);
  });

  it(
    "commits ten cohorts (≤ 6 git processes each) and reads " +
      "every file back at each revision without moving the worktree",
    async () => {
      const { backend, counter, root, env } = await repo();
      await backend.checkIdentity();
      let basis: CohortSnapshot = await backend.loadCurrent(paths);
      expect(basis.pointer).toBeNull();
      const revisions: Array<{ revision: string; files: Map<string, Buffer> }> = [];
      for (let n = 1; n <= 10; n++) {
        // sparse: the cwd scope only changes on even cohorts, the global scope only every third
        const writes = cohort(n);
        if (n % 2 === 1 && n > 1) {
          writes.delete(c.checkpoint);
          writes.delete(c.patches);
        }
        if (n % 3 !== 1) {
          writes.delete(g.checkpoint);
          writes.delete(g.patches);
        }
        const before = counter.count;
        const receipt = await backend.publish({ basis, writes, message: `cohort ${n}` });
        expect(counter.count - before).toBeLessThanOrEqual(6);
        expect(receipt.committed).toBe(true);
        expect(receipt.indexSynced).toBe(true);
        expect(receipt.pointer.revision).toMatch(/^[0-9a-f]{40}$/);
        const loadBefore = counter.count;
        basis = await backend.loadCurrent(paths);
        expect(counter.count - loadBefore).toBeLessThanOrEqual(2);
        expect(basis.pointer).toEqual(receipt.pointer);
        revisions.push({
          revision: receipt.pointer.revision,
          files: new Map(
            [...basis.files].map(([p, b]) => [p, b!]).filter(([, b]) => b !== null) as Array<[string, Buffer]>,
          ),
        });
      }
      expect(git(root, env, "rev-list", "--count", "HEAD").trim()).toBe("10");
      expect(git(root, env, "status", "--porcelain")).toBe(""); // no artificial staged/unstaged entries
      const liveBefore = readFileSync(join(root, s.meta));
      for (const { revision, files } of revisions) {
        const past = await backend.loadRevision({ revision }, paths);
        for (const path of paths)
          expect(past.files.get(path) ?? null, `${path}@${revision}`).toEqual(files.get(path) ?? null);
      }
      expect(readFileSync(join(root, s.meta))).toEqual(liveBefore);
      expect(git(root, env, "rev-parse", "HEAD").trim()).toBe(revisions[9]!.revision);
      expect(git(root, env, "status", "--porcelain")).toBe("");
    },
  );

  it("reads an old revision with a > 1 MiB file while the worktree holds a newer one", async () => {
    const { backend, root, env } = await repo();
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 0x61);
    big.write('{"big":"', 0);
    const first = await backend.publish({
      basis: await backend.loadCurrent(paths),
      writes: new Map([
        [s.checkpoint, big],
        [s.patches, Buffer.from("")],
      ]),
    });
    await backend.publish({
      basis: await backend.loadCurrent(paths),
      writes: new Map([[s.checkpoint, Buffer.from("small")]]),
    });
    const cold = await backend.loadRevision(first.pointer, paths);
    expect(cold.files.get(s.checkpoint)?.length).toBe(big.length);
    expect(cold.files.get(s.checkpoint)!.equals(big)).toBe(true); // Buffer.equals: deep toEqual on MiBs is slow
    expect(readFileSync(join(root, s.checkpoint), "utf8")).toBe("small");
    expect(git(root, env, "status", "--porcelain")).toBe("");
    await expect(backend.loadRevision({ revision: "1".repeat(40) }, paths)).rejects.toMatchObject({
      code: "revision-missing",
    });
    await expect(backend.loadRevision({ revision: "file:" + "0".repeat(64) }, paths)).rejects.toMatchObject({
      code: "pointer-unavailable",
    });
    await expect(backend.loadRevision({ revision: "HEAD" }, paths)).rejects.toMatchObject({ code: "invalid-pointer" });
  });

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

  it("fails closed when live files diverge from HEAD, and refuses symlinked members", async () => {
    const { backend, root } = await repo();
    await backend.publish({ basis: await backend.loadCurrent(paths), writes: new Map([[g.meta, Buffer.from("1")]]) });
    writeFileSync(join(root, g.meta), "edited by hand");
    await expect(backend.loadCurrent(paths)).rejects.toMatchObject({ code: "worktree-diverged", file: g.meta });
    writeFileSync(join(root, g.meta), "1");
    const outside = join(temps.make(), "x.json");
    writeFileSync(outside, "victim");
    symlinkSync(outside, join(root, g.checkpoint));
    await expect(backend.loadCurrent(paths)).rejects.toMatchObject({ code: "symlink-refused" });
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

  it("a file pointer proves its session files over a diverged worktree; shared ones are read as they are", async () => {
    const { FileBackend } = await import("../../../storage/file/file-backend.ts");
    const { root, env, backend } = await repo();
    await backend.publish({ basis: await backend.loadCurrent(paths), writes: cohort(1) });
    // Git absent for a while: this session and another one publish file-only over the same files.
    const files = new FileBackend(root, { generation: "t" });
    const mine = await files.publish({
      basis: await files.loadCurrent(paths),
      writes: new Map([[s.meta, Buffer.from("offline")]]),
    });
    const before = await files.loadCurrent(paths);
    await files.publish({ basis: before, writes: new Map([[c.checkpoint, Buffer.from("cwd by B")]]) });
    await expect(backend.loadCurrent(paths)).rejects.toMatchObject({ code: "worktree-diverged" });
    const proven = await backend.loadCurrent(paths, { provenCohort: mine.pointer });
    expect(proven.pointer).toEqual(mine.pointer);
    expect(proven.files.get(c.checkpoint)).toEqual(Buffer.from("cwd by B"));
    expect((await backend.loadRevision(mine.pointer, paths)).pointer).toEqual(mine.pointer);
    // A pointer an older version recorded over every file is held to the shared files too.
    await expect(
      backend.loadCurrent(paths, { provenCohort: legacyFilePointerOf(before.hashes) }),
    ).rejects.toMatchObject({ code: "worktree-diverged" });
    // Publishing on the proven snapshot commits the complete current files.
    const receipt = await backend.publish({ basis: proven, writes: new Map() });
    expect(receipt.committed).toBe(true);
    expect(git(root, env, "status", "--porcelain")).toBe("");
    expect((await backend.loadCurrent(paths)).pointer).toEqual(receipt.pointer);
  });

  it(
    "adopts a file-only store with its first commit: no " +
      "fabricated history, the file pointer resolves while current",
    async () => {
      const { FileBackend } = await import("../../../storage/file/file-backend.ts");
      const home = temps.make();
      const cfg = join(home, "gitconfig");
      writeFileSync(cfg, "");
      const env = gitTestEnv(cfg);
      const root = join(home, "state-flow");
      const files = new FileBackend(root, { generation: "t" });
      let snap = await files.loadCurrent(paths);
      for (let n = 1; n <= 3; n++) {
        await files.publish({ basis: snap, writes: cohort(n) });
        snap = await files.loadCurrent(paths);
      }
      const filePointer = snap.pointer!;
      const backend = (await openGitBackend({ root, binary: GIT, env, generation: "t", init: true }))!;
      // Unborn: the file pointer still names the live files exactly.
      const unborn = await backend.loadRevision(filePointer, paths);
      expect(unborn.pointer).toEqual(filePointer);
      await expect(backend.loadRevision({ revision: `file:${"0".repeat(64)}` }, paths)).rejects.toMatchObject({
        code: "pointer-unavailable",
      });
      const current = await backend.loadCurrent(paths);
      const receipt = await backend.publish({ basis: current, writes: new Map() });
      expect(git(root, env, "rev-list", "--count", "HEAD").trim()).toBe("1");
      expect(git(root, env, "ls-tree", "-r", "--name-only", "HEAD").trim().split("\n").sort()).toEqual(
        [...paths].filter((p) => snap.files.get(p) !== null).sort(),
      );
      const adopted = await backend.loadRevision(filePointer, paths);
      expect(adopted.pointer).toEqual(receipt.pointer);
      for (const path of paths) expect(adopted.files.get(path)).toEqual(snap.files.get(path));
      expect(git(root, env, "status", "--porcelain")).toBe("");
    },
  );
});

describe("remoteHas: the remote's real history, asked without pushing", () => {
  it("null without a remote or when it cannot be asked; true for the remote's commit and its ancestors", async () => {
    const { root, env, backend, home } = await repo();
    const commit = async (n: number) => {
      const basis = await backend.loadCurrent(paths);
      return (await backend.publish({ basis, writes: cohort(n), message: `cohort ${n}` })).pointer.revision;
    };
    const first = await commit(1);
    expect(await backend.remoteHas(first), "no remote: local-only").toBeNull();
    const remote = join(home, "remote.git");
    git(root, env, "remote", "add", "origin", remote);
    expect(await backend.remoteHas(first), "an unreachable remote cannot be asked").toBeNull();
    git(home, env, "init", "-q", "--bare", remote);
    expect(await backend.remoteHas(first), "the remote has no branch yet").toBe(false);
    const second = await commit(2);
    expect(await backend.pushRevision(second)).toMatchObject({ kind: "pushed" });
    expect(await backend.remoteHas(second)).toBe(true);
    expect(await backend.remoteHas(first), "an ancestor of what the remote has").toBe(true);
    const third = await commit(3);
    expect(await backend.remoteHas(third), "newer than the remote").toBe(false);
  });
});

describe("reads of the cohort this backend committed last", () => {
  it("need no git process while HEAD names it, nor after another commit; packed objects go back to git", async () => {
    const { backend, root, env, counter } = await repo();
    const first = await backend.publish({
      basis: await backend.loadCurrent(paths),
      writes: new Map(paths.map((p) => [p, Buffer.from(`one ${p}`)] as const)),
    });
    let before = counter.count;
    const read = await backend.loadCurrent(paths);
    expect(counter.count - before, "no cat-file").toBe(0);
    expect(read.pointer).toEqual(first.pointer);
    // A hand edit is still caught without git: the live bytes are checked against the known blobs.
    writeFileSync(join(root, s.meta), "edited by hand");
    await expect(backend.loadCurrent(paths)).rejects.toMatchObject({ code: "worktree-diverged", file: s.meta });
    writeFileSync(join(root, s.meta), `one ${s.meta}`);
    git(root, env, "commit", "-q", "--allow-empty", "-m", "user");
    writeFileSync(join(root, s.meta), "edited by hand");
    await expect(backend.loadCurrent(paths), "HEAD's blobs from its loose objects").rejects.toMatchObject({
      code: "worktree-diverged",
      file: s.meta,
    });
    writeFileSync(join(root, s.meta), `one ${s.meta}`);
    before = counter.count;
    const after = await backend.loadCurrent(paths);
    expect(counter.count - before, "HEAD moved: resolved from its loose objects").toBe(0);
    expect(after.pointer!.revision).toBe(git(root, env, "rev-parse", "HEAD").trim());
    git(root, env, "commit", "-q", "--allow-empty", "-m", "user again");
    git(root, env, "gc", "-q", "--prune=now");
    before = counter.count;
    const packed = await backend.loadCurrent(paths);
    expect(counter.count - before, "HEAD moved and everything is packed: git resolves it").toBe(1);
    expect(packed.pointer!.revision).toBe(git(root, env, "rev-parse", "HEAD").trim());
  });

  it("loadRevision of a known revision reads the live files only while they still have its blobs", async () => {
    const { backend, root, counter } = await repo();
    const bytes = new Map(paths.map((p) => [p, Buffer.from(`one ${p}`)] as const));
    const first = await backend.publish({ basis: await backend.loadCurrent(paths), writes: bytes });
    let before = counter.count;
    const read = await backend.loadRevision(first.pointer, paths);
    expect(counter.count - before, "no ls-tree, no cat-file").toBe(0);
    expect(read.files).toEqual(bytes);
    writeFileSync(join(root, s.meta), "edited by hand");
    before = counter.count;
    const past = await backend.loadRevision(first.pointer, paths);
    expect(counter.count - before, "the live files differ: git reads the revision").toBe(2);
    expect(past.files.get(s.meta)).toEqual(bytes.get(s.meta));
  });

  it("a new backend (a resume) reads the cohort another process committed without a git process", async () => {
    const { backend, root, env, counter } = await repo();
    await backend.publish({ basis: await backend.loadCurrent(paths), writes: cohort(1) });
    const resumed = (await openGitBackend({ root, binary: GIT, env, counter, generation: "resume" }))!;
    const before = counter.count;
    const read = await resumed.loadCurrent(paths);
    expect(counter.count - before).toBe(0);
    expect(read.pointer!.revision).toBe(git(root, env, "rev-parse", "HEAD").trim());
  });

  it("the publication remote is read once per config file state", async () => {
    const { backend, root, env, counter } = await repo();
    await backend.publish({ basis: await backend.loadCurrent(paths), writes: cohort(1) });
    let before = counter.count;
    expect(await backend.publicationRemote()).toBeNull();
    expect(await backend.publicationRemote()).toBeNull();
    expect(counter.count - before).toBe(1);
    git(root, env, "remote", "add", "origin", join(root, "nowhere.git"));
    before = counter.count;
    expect(await backend.publicationRemote()).toBe("origin");
    expect(counter.count - before).toBe(1);
  });
});
