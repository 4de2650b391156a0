// The GitBackend facade end to end: opening (and initializing) a store's exact-root repository,
// the identity check, publication and reads through it, and the adoption of a file-only store.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GitBackend, openGitBackend } from "../../../storage/git/git-backend.ts";
import { openStore, type CohortSnapshot } from "../../../storage/open-store.ts";
import { GIT, cohort, gitBackendRepo } from "../../support/git-backend-fixture.ts";
import { TempDirs, git, gitTestEnv, cohortFixture } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const { keys, paths, g, c, s } = cohortFixture();
const repo = (options: { identity?: boolean } = {}) => gitBackendRepo(temps, options);

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
