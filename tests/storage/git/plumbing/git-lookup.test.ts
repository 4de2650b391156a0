import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { batchCheckAtCommit, parseTree, readLooseObjectSync } from "../../../../storage/git/plumbing/git-lookup.ts";
import { TempDirs, git, gitTestEnv } from "../../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

function repo() {
  const dir = temps.make("sf-lookup-");
  const cfg = join(dir, "gitconfig");
  writeFileSync(cfg, "");
  const env = gitTestEnv(cfg);
  git(dir, env, "init", "-q");
  return { dir, env, objects: join(dir, ".git", "objects") };
}

/** git's own answer, sizes dropped (the caller reads only ids and types). */
function gitBatchCheck(dir: string, env: NodeJS.ProcessEnv, paths: readonly string[]): string {
  const input = `HEAD\n${paths.map((p) => `HEAD:${p}\n`).join("")}`;
  const out = spawnSync("git", ["cat-file", "--batch-check"], { cwd: dir, env, input, encoding: "utf8" }).stdout;
  return out.replace(/^([0-9a-f]{40} \w+) \d+$/gm, "$1");
}

describe("paths at a commit from loose objects", () => {
  it("answers exactly as git cat-file --batch-check: files, nested files, directories, missing paths", () => {
    const { dir, env, objects } = repo();
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    writeFileSync(join(dir, "top.json"), "{}\n");
    writeFileSync(join(dir, "a", "one.txt"), "1\n");
    writeFileSync(join(dir, "a", "b", "two.txt"), "2\n");
    writeFileSync(join(dir, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
    git(dir, env, "add", "-A");
    git(dir, env, "commit", "-q", "-m", "one");
    const head = git(dir, env, "rev-parse", "HEAD").trim();
    const paths = ["a/b", "a/b/two.txt", "a/one.txt", "a/one.txt/x", "gone.json", "nope/x", "run.sh", "top.json"];
    const mine = batchCheckAtCommit(objects, head, paths);
    expect(mine).toBe(gitBatchCheck(dir, env, paths));
    expect(mine).toMatch(/^[0-9a-f]{40} commit\n[0-9a-f]{40} tree\n/);
    expect(mine).toContain("HEAD:gone.json missing\n");
  });

  it("leaves to git what it cannot answer exactly: packed objects, symlinks, submodules, corrupt objects", () => {
    const { dir, env, objects } = repo();
    writeFileSync(join(dir, "f.txt"), "f\n");
    symlinkSync("f.txt", join(dir, "link"));
    git(dir, env, "add", "-A");
    git(dir, env, "commit", "-q", "-m", "one");
    const head = git(dir, env, "rev-parse", "HEAD").trim();
    expect(batchCheckAtCommit(objects, head, ["f.txt"])).not.toBeNull();
    expect(batchCheckAtCommit(objects, head, ["link"])).toBeNull();
    git(dir, env, "update-index", "--add", "--cacheinfo", `160000,${"1".repeat(40)},sub`);
    const withSubmodule = git(dir, env, "commit-tree", git(dir, env, "write-tree").trim(), "-m", "s").trim();
    expect(batchCheckAtCommit(objects, withSubmodule, ["sub"])).toBeNull();
    expect(batchCheckAtCommit(objects, withSubmodule, ["f.txt"])).not.toBeNull();
    // a commit whose bytes do not hash to its name
    const path = join(objects, head.slice(0, 2), head.slice(2));
    const good = readLooseObjectSync(objects, head);
    expect(good?.type).toBe("commit");
    unlinkSync(path);
    writeFileSync(path, Buffer.from("not zlib"));
    expect(readLooseObjectSync(objects, head)).toBeNull();
    expect(batchCheckAtCommit(objects, head, ["f.txt"])).toBeNull();
    // after a gc everything is packed
    const { dir: d2, env: e2, objects: o2 } = repo();
    writeFileSync(join(d2, "f.txt"), "f\n");
    git(d2, e2, "add", "-A");
    git(d2, e2, "commit", "-q", "-m", "one");
    git(d2, e2, "gc", "-q", "--prune=now");
    expect(batchCheckAtCommit(o2, git(d2, e2, "rev-parse", "HEAD").trim(), ["f.txt"])).toBeNull();
  });

  it("parses tree entries and refuses a truncated tree", () => {
    const id = Buffer.alloc(20, 0xab);
    const body = Buffer.concat([Buffer.from("100644 a.txt\0"), id, Buffer.from("40000 d\0"), id]);
    expect(parseTree(body)).toEqual(
      new Map([
        ["a.txt", { mode: "100644", id: "ab".repeat(20) }],
        ["d", { mode: "40000", id: "ab".repeat(20) }],
      ]),
    );
    expect(parseTree(body.subarray(0, body.length - 1))).toBeNull();
  });
});
