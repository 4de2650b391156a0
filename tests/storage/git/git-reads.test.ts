// Reads of a Git store (git-reads.ts): the current view verified against HEAD, past revisions
// without moving the worktree, and the reads that need no git process.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openGitBackend } from "../../../storage/git/git-backend.ts";
import { changedMembers } from "../../../storage/git/git-reads.ts";
import { legacyFilePointerOf } from "../../../storage/cohort-basis.ts";
import { sha256Hex } from "../../../storage/fs/fs-safe.ts";
import { GIT, cohort, gitBackendRepo } from "../../support/git-backend-fixture.ts";
import { TempDirs, git, cohortFixture } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const { paths, g, c, s } = cohortFixture();
const repo = () => gitBackendRepo(temps);

describe("git reads", () => {
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
});

describe("changedMembers", () => {
  it("names the members whose bytes after the writes differ from the live files", () => {
    const current = new Map<string, Buffer | null>([
      ["a", Buffer.from("a")],
      ["b", Buffer.from("b")],
      ["c", null],
      ["d", Buffer.from("d")],
    ]);
    const hashes = new Map([...current].map(([p, b]) => [p, b === null ? null : sha256Hex(b)] as const));
    const writes = new Map<string, Buffer | null>([
      ["a", Buffer.from("a")], // same bytes: unchanged
      ["b", Buffer.from("B")],
      ["c", null], // still absent
      ["d", null], // deleted
    ]);
    expect(changedMembers(["a", "b", "c", "d"], writes, current, hashes)).toEqual(["b", "d"]);
  });
});

describe("worktree-diverged says which case it is and the command that undoes it", () => {
  /** The refusal of the next read, and its advice run as printed (then the read works and nothing is left). */
  async function followAdvice(setup: (root: string, env: NodeJS.ProcessEnv) => void, expected: RegExp) {
    const { backend, root, env } = await repo();
    await backend.publish({ basis: await backend.loadCurrent(paths), writes: new Map([[g.meta, Buffer.from("1")]]) });
    const revision = git(root, env, "rev-parse", "HEAD").trim();
    setup(root, env);
    const error = (await backend.loadCurrent(paths).catch((e: unknown) => e)) as Error;
    expect(error).toMatchObject({ code: "worktree-diverged" });
    const message = error.message.replaceAll(revision, "<rev>").replaceAll(root, "<root>");
    expect(message).toMatch(expected);
    const advice = / then either (?:remove it|restore the committed version \(file and index entry\)) with (.+?), or /;
    const command = advice.exec(error.message)![1]!;
    expect(spawnSync("sh", ["-c", command], { env, encoding: "utf8" }).status, command).toBe(0);
    expect((await backend.loadCurrent(paths)).pointer).toEqual({ revision });
    expect(git(root, env, "status", "--porcelain")).toBe("");
  }

  const tail =
    "A publisher was interrupted or the file was changed by hand; nothing was read as current state. Inspect it with ";

  it("a changed file: restore the committed version", async () => {
    await followAdvice(
      (root) => writeFileSync(join(root, g.meta), "edited by hand"),
      new RegExp(
        `^The live file ${g.meta} differs from its version in the committed revision <rev>\\. ${tail}` +
          `git -C <root> diff HEAD -- ${g.meta}, then either restore the committed version \\(file and index ` +
          `entry\\) with git -C <root> checkout HEAD -- ${g.meta}, or commit the intended bytes; then retry\\.$`,
      ),
    );
  });

  it("a missing file: restore it", async () => {
    await followAdvice(
      (root) => rmSync(join(root, g.meta)),
      new RegExp(`^The live file ${g.meta} is missing, but the committed revision <rev> contains it\\. ${tail}`),
    );
  });

  it("a file the revision does not contain: remove it", async () => {
    await followAdvice(
      (root) => {
        mkdirSync(dirname(join(root, c.checkpoint)), { recursive: true });
        writeFileSync(join(root, c.checkpoint), "never committed");
      },
      new RegExp(
        `^The live file ${c.checkpoint} exists, but the committed revision <rev> does not contain it\\. ${tail}` +
          `git -C <root> status --short -- ${c.checkpoint}, then either remove it with git -C <root> rm -q ` +
          `--cached --ignore-unmatch -- ${c.checkpoint} && rm -f <root>/${c.checkpoint}, or commit the intended ` +
          `bytes; then retry\\.$`,
      ),
    );
  });
});
