import { spawn } from "node:child_process";
import { readFileSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import {
  commitObjectBody,
  formatGitTimezone,
  gitDateOf,
  gitObjectId,
  isPlainCommitMessage,
  parseGitIdent,
  writeLooseObject,
  writeSmallLooseObjectSync,
} from "../../../../storage/git/plumbing/git-objects.ts";
import { TempDirs, git, gitTestEnv } from "../../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

function repo(extra: NodeJS.ProcessEnv = {}) {
  const dir = temps.make("sf-objects-");
  const cfg = join(dir, "gitconfig");
  writeFileSync(cfg, "");
  const env = { ...gitTestEnv(cfg), ...extra };
  git(dir, env, "init", "-q");
  return { dir, env };
}

describe("git objects", () => {
  it("formats timezones and dates like git", () => {
    expect(formatGitTimezone(0)).toBe("+0000");
    expect(formatGitTimezone(330)).toBe("+0530");
    expect(formatGitTimezone(-210)).toBe("-0330");
    expect(formatGitTimezone(-600)).toBe("-1000");
    const now = Date.now();
    expect(gitDateOf(now)).toBe(`${Math.floor(now / 1000)} ${formatGitTimezone(-new Date(now).getTimezoneOffset())}`);
    expect(parseGitIdent("A B <a@b> 1700000000 +0100\n")).toEqual({
      person: "A B <a@b>",
      date: "1700000000 +0100",
      seconds: 1700000000,
    });
    expect(parseGitIdent("garbage")).toBeNull();
    // the message is stored as `git commit-tree -m` stores it: completed with a final newline if non-empty
    const storedMessage = (message: string) =>
      commitObjectBody({ tree: "t", parents: [], author: "a", committer: "c", message }).toString("utf8");
    expect(storedMessage("m")).toBe("tree t\nauthor a\ncommitter c\n\nm\n");
    expect(storedMessage("m\n")).toBe("tree t\nauthor a\ncommitter c\n\nm\n");
    expect(storedMessage("")).toBe("tree t\nauthor a\ncommitter c\n\n");
    expect(isPlainCommitMessage("ok ü")).toBe(true);
    expect(isPlainCommitMessage("a\0b")).toBe(false);
    expect(isPlainCommitMessage("\ud800x")).toBe(false);
  });

  it(
    "writes commits byte-identical to git commit-tree (fixed " +
      "dates, parents, messages), which git fsck --strict accepts",
    async () => {
      const dates = { GIT_AUTHOR_DATE: "1700000000 +0130", GIT_COMMITTER_DATE: "@1700000123 -0700" };
      const { dir, env } = repo(dates);
      writeFileSync(join(dir, "a.txt"), "a\n");
      git(dir, env, "add", "a.txt");
      const tree = git(dir, env, "write-tree").trim();
      const author = parseGitIdent(git(dir, env, "var", "GIT_AUTHOR_IDENT"))!;
      const committer = parseGitIdent(git(dir, env, "var", "GIT_COMMITTER_IDENT"))!;
      expect(committer.date).toBe("1700000123 -0700");
      let parent: string | null = null;
      for (const message of [
        "state-flow: accepted cohort",
        "multi\n\nline\n",
        "",
        'ünïcode ✓ {"x":1}',
        "trailing  \n\n",
      ]) {
        const expected: string = git(
          dir,
          env,
          "commit-tree",
          tree,
          ...(parent ? ["-p", parent] : []),
          "-m",
          message,
        ).trim();
        const body = commitObjectBody({
          tree,
          parents: parent ? [parent] : [],
          author: `${author.person} ${author.date}`,
          committer: `${committer.person} ${committer.date}`,
          message,
        });
        expect(gitObjectId("commit", body), JSON.stringify(message)).toBe(expected);
        expect(body.equals(Buffer.from(git(dir, env, "cat-file", "commit", expected), "utf8"))).toBe(true);
        parent = expected;
      }
      // our own written objects (a fresh one, and an existing one left alone) are read back by git
      const mine = commitObjectBody({
        tree,
        parents: [parent!],
        author: `${author.person} ${author.date}`,
        committer: `${committer.person} ${committer.date}`,
        message: "mine",
      });
      const id = writeSmallLooseObjectSync(join(dir, ".git", "objects"), "commit", mine, { fsync: true });
      expect(writeSmallLooseObjectSync(join(dir, ".git", "objects"), "commit", mine)).toBe(id);
      expect(git(dir, env, "cat-file", "-t", id).trim()).toBe("commit");
      const blob = Buffer.from([0, 1, 2, 0xff]);
      const blobId = await writeLooseObject(join(dir, ".git", "objects"), "blob", blob);
      writeFileSync(join(dir, "blob.bin"), blob);
      expect(blobId).toBe(git(dir, env, "hash-object", "--no-filters", "blob.bin").trim());
      expect(
        inflateSync(readFileSync(join(dir, ".git", "objects", id.slice(0, 2), id.slice(2)))).equals(
          Buffer.concat([Buffer.from(`commit ${mine.length}\0`), mine]),
        ),
      ).toBe(true);
      git(dir, env, "update-ref", "refs/heads/mine", id);
      git(dir, env, "fsck", "--strict", "--no-progress");
    },
  );

  it("writes commits identical to git commit-tree at the current time and timezone", () => {
    const { dir, env } = repo();
    const tree = git(dir, env, "write-tree").trim();
    const author = parseGitIdent(git(dir, env, "var", "GIT_AUTHOR_IDENT"))!;
    // git's date for "now" is what gitDateOf prints for some second between before and after the call,
    // however long the call takes on a loaded machine (one second of slack below: git's time() reads the
    // kernel's coarse clock, which may trail Date.now by a tick); the commit is then built for that second.
    const before = Date.now();
    const expected = git(dir, env, "commit-tree", tree, "-m", "now").trim();
    const after = Date.now();
    const text = git(dir, env, "cat-file", "commit", expected);
    const gitDate = /^author .*> (\d+ [+-]\d{4})$/m.exec(text)![1]!;
    const seconds = Number(gitDate.split(" ")[0]);
    expect(seconds).toBeGreaterThanOrEqual(Math.floor(before / 1000) - 1);
    expect(seconds).toBeLessThanOrEqual(Math.floor(after / 1000));
    expect(gitDate).toBe(gitDateOf(seconds * 1000)); // the same seconds and timezone field
    const body = commitObjectBody({
      tree,
      parents: [],
      author: `${author.person} ${gitDate}`,
      committer: `${author.person} ${gitDate}`,
      message: "now",
    });
    expect(gitObjectId("commit", body)).toBe(expected);
  });

  it("refreshes the mtime of an object that already exists, as git's freshen does", async () => {
    const { dir } = repo();
    const objects = join(dir, ".git", "objects");
    const ids = [
      await writeLooseObject(objects, "blob", Buffer.from("a")),
      writeSmallLooseObjectSync(objects, "tree", Buffer.alloc(0)),
    ];
    const old = Date.now() / 1000 - 30 * 24 * 3600;
    const loose = ids.map((id) => join(objects, id.slice(0, 2), id.slice(2)));
    for (const path of loose) utimesSync(path, old, old);
    // Refreshed means set to the time of the write, however long the writes took: not before they began
    // (less one second: the file system's clock is the kernel's coarse one, which may trail Date.now).
    const before = Math.floor(Date.now() / 1000) - 1;
    expect(await writeLooseObject(objects, "blob", Buffer.from("a"))).toBe(ids[0]);
    expect(writeSmallLooseObjectSync(objects, "tree", Buffer.alloc(0))).toBe(ids[1]);
    for (const path of loose) expect(Math.floor(statSync(path).mtimeMs / 1000), path).toBeGreaterThanOrEqual(before);
  });

  it("writes every object while git prune-packed removes the empty fan-out directories meanwhile", async () => {
    const { dir, env } = repo();
    const objects = join(dir, ".git", "objects");
    // git prune-packed (what gc and repack run) removes every empty fan-out directory it visits
    const pruner = spawn("sh", ["-c", "while :; do git prune-packed; done"], { cwd: dir, env, stdio: "ignore" });
    try {
      for (let i = 0; i < 150; i++) {
        const body = Buffer.from(`object ${i}`);
        const id =
          i % 2 ? await writeLooseObject(objects, "blob", body) : writeSmallLooseObjectSync(objects, "blob", body);
        const path = join(objects, id.slice(0, 2), id.slice(2));
        expect(inflateSync(readFileSync(path)).subarray(-body.length)).toEqual(body);
        unlinkSync(path); // empty again, so that the next write races the pruner for its directory
      }
    } finally {
      pruner.kill();
    }
  });
});
