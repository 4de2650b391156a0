import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseCatFileBatch, readRevisionFiles } from "../../../storage/git/git-revision.ts";
import { GitRunner, findGitExecutable, type GitProcessCounter } from "../../../storage/git/git-runner.ts";
import { TempDirs, git, gitTestEnv } from "../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());
const GIT = findGitExecutable()!;

/** A repository with two commits: a.txt and big.bin, then a.txt changed and link → a.txt added. */
function repository() {
  const root = temps.make("sf-revision-");
  const config = join(temps.make("sf-revision-cfg-"), "gitconfig");
  writeFileSync(config, "");
  const env = gitTestEnv(config);
  git(root, env, "init", "-q");
  const big = Buffer.alloc(2 * 1024 * 1024 + 3, 0xfe); // not UTF-8, > 1 MiB
  writeFileSync(join(root, "a.txt"), "first\n");
  writeFileSync(join(root, "big.bin"), big);
  git(root, env, "add", "-A");
  git(root, env, "commit", "-q", "-m", "first");
  const first = git(root, env, "rev-parse", "HEAD").trim();
  writeFileSync(join(root, "a.txt"), "second\n");
  symlinkSync("a.txt", join(root, "link"));
  git(root, env, "add", "-A");
  git(root, env, "commit", "-q", "-m", "second");
  const counter: GitProcessCounter = { count: 0 };
  return { root, first, big, counter, runner: new GitRunner({ cwd: root, env, binary: GIT, counter }) };
}

describe("reading a past revision", () => {
  it("returns each member's exact bytes at the revision, null for one it lacks, in two git processes", async () => {
    const { root, first, big, counter, runner } = repository();
    const files = await readRevisionFiles(runner, root, first, ["a.txt", "big.bin", "absent.txt"]);
    expect(files.get("a.txt")?.toString()).toBe("first\n"); // not the live "second"
    expect(files.get("big.bin")?.equals(big)).toBe(true);
    expect(files.get("absent.txt")).toBeNull();
    expect(counter.count).toBe(2);
  });

  it("refuses a member that is not a regular file at the revision", async () => {
    const { root, runner } = repository();
    const head = (await runner.execText(["rev-parse", "HEAD"])).trim();
    await expect(readRevisionFiles(runner, root, head, ["link"])).rejects.toMatchObject({
      code: "not-regular-object",
      file: "link",
    });
  });

  it("names a revision the repository does not have, and what to do", async () => {
    const { root, runner } = repository();
    await expect(readRevisionFiles(runner, root, "1".repeat(40), ["a.txt"])).rejects.toMatchObject({
      code: "revision-missing",
      message: expect.stringContaining("select another checkpoint or restore the original repository"),
    });
  });

  it("parses cat-file batches, missing entries included, and refuses truncated output", () => {
    const raw = Buffer.from("aaaa blob 3\nabc\nbbbb missing\ncccc blob 0\n\n");
    expect(parseCatFileBatch(raw).map((o) => o?.bytes.toString())).toEqual(["abc", undefined, ""]);
    expect(() => parseCatFileBatch(Buffer.from("aaaa blob 10\nabc\n"))).toThrow(/Truncated/);
    expect(() => parseCatFileBatch(Buffer.from("aaaa blob 3"))).toThrow(/header without newline/);
  });
});
