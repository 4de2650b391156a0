import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  indexPathOf,
  overlayEntries,
  parseIndex,
  serializeIndex,
  type IndexEntry,
} from "../../../../storage/git/plumbing/git-index.ts";
import { TempDirs, git, initRepo } from "../../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

const repo = () => initRepo(temps, "sf-index-");

/** A worktree with the shapes an index can hold: nested dirs, names that sort around "/", an executable, a symlink. */
function populate(dir: string): void {
  mkdirSync(join(dir, "a", "b"), { recursive: true });
  mkdirSync(join(dir, "a-b"), { recursive: true });
  writeFileSync(join(dir, "a", "b", "deep.json"), "{}\n");
  writeFileSync(join(dir, "a", "x"), "x\n");
  writeFileSync(join(dir, "a-b", "y"), "y\n");
  writeFileSync(join(dir, "a.b"), "dot\n");
  writeFileSync(join(dir, "a0"), "zero\n");
  writeFileSync(join(dir, "grüße.txt"), "utf-8 name\n");
  writeFileSync(join(dir, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
  symlinkSync("a/x", join(dir, "link"));
}

/** `git ls-files -s` of an index file given by path. */
function lsFiles(dir: string, env: NodeJS.ProcessEnv, index: string): string {
  return git(dir, { ...env, GIT_INDEX_FILE: index }, "ls-files", "-s", "-z");
}

describe("git index", () => {
  it("reads git's own index and writes it back byte for byte", () => {
    const { dir, env, index } = repo();
    populate(dir);
    git(dir, env, "add", "-A");
    // a name longer than the 12-bit length field (stored NUL-terminated) and a gitlink
    const blob = git(dir, env, "hash-object", "-w", "a/x").trim();
    const long = `${"d".repeat(200)}/`.repeat(21) + "long.json";
    git(dir, env, "update-index", "--add", "--cacheinfo", `100644,${blob},${long}`);
    git(dir, env, "update-index", "--add", "--cacheinfo", `160000,${blob},sub`);
    const bytes = readFileSync(index);
    const parsed = parseIndex(bytes);
    expect(parsed.supported).toBe(true);
    if (!parsed.supported) return;
    const byPath = new Map(parsed.entries.map((e) => [Buffer.from(e.path, "latin1").toString("utf8"), e]));
    expect(byPath.get("run.sh")?.mode).toBe(0o100755);
    expect(byPath.get("link")?.mode).toBe(0o120000);
    expect(byPath.get("sub")?.mode).toBe(0o160000);
    expect(byPath.get(long)?.oid).toBe(blob);
    expect(byPath.has("grüße.txt")).toBe(true);
    expect(serializeIndex(parsed.entries).equals(bytes)).toBe(true);
    // version 4 (prefix-compressed names, no padding): the same entries, written back byte for byte
    git(dir, env, "update-index", "--index-version", "4");
    const v4 = readFileSync(index);
    const parsed4 = parseIndex(v4);
    expect(parsed4).toMatchObject({ supported: true, version: 4 });
    if (!parsed4.supported) return;
    const withoutRaw = (entries: IndexEntry[]) => entries.map(({ raw: _raw, ...entry }) => entry);
    expect(withoutRaw(parsed4.entries)).toEqual(withoutRaw(parsed.entries));
    expect(serializeIndex(parsed4.entries, 4).equals(v4)).toBe(true);
  });

  it("skips optional extensions (the cache-tree) and writes an index git reads as the same, clean", () => {
    const { dir, env, index } = repo();
    populate(dir);
    git(dir, env, "add", "-A");
    git(dir, env, "commit", "-q", "-m", "one"); // writes the TREE extension
    const bytes = readFileSync(index);
    expect(bytes.includes(Buffer.from("TREE"))).toBe(true);
    const parsed = parseIndex(bytes);
    if (!parsed.supported) throw new Error(parsed.reason);
    const before = lsFiles(dir, env, index);
    writeFileSync(index, serializeIndex(parsed.entries));
    expect(lsFiles(dir, env, index)).toBe(before);
    expect(git(dir, env, "status", "--porcelain")).toBe("");
  });

  it.each([2, 4] as const)(
    "overlays blobs and deletions exactly like git update-index --index-info (index version %i)",
    (version) => {
      const { dir, env, index } = repo();
      populate(dir);
      git(dir, env, "add", "-A");
      git(dir, env, "update-index", "--index-version", String(version));
      const copy = join(dir, ".git", "index.copy");
      copyFileSync(index, copy);
      const one = git(dir, env, "hash-object", "-w", "--stdin", "--no-filters").trim(); // empty blob
      const overlay = new Map<string, string | null>([
        ["a/x", one], // replaced (mode 100644, stat zeroed)
        ["run.sh", null], // removed
        ["new/dir/ü.json", one], // added, sorted into place
        ["absent", null], // removing what is not there is a no-op
      ]);
      let info = "";
      for (const [path, id] of overlay)
        info += id === null ? `0 ${"0".repeat(40)}\t${path}\0` : `100644 ${id}\t${path}\0`;
      execWithInput(dir, { ...env, GIT_INDEX_FILE: copy }, ["update-index", "-z", "--index-info"], info);
      const parsed = parseIndex(readFileSync(index));
      if (!parsed.supported) throw new Error(parsed.reason);
      const ours = overlayEntries(parsed.entries, overlay);
      expect(ours.map((e) => e.path)).toEqual([...ours.map((e) => e.path)].sort());
      const added = ours.find((e) => e.path === indexPathOf("new/dir/ü.json"));
      expect(added).toMatchObject({ mode: 0o100644, oid: one }); // git's regular-file mode
      writeFileSync(index, serializeIndex(ours, parsed.version));
      expect(lsFiles(dir, env, index)).toBe(lsFiles(dir, env, copy));
      expect(readFileSync(index).equals(readFileSync(copy))).toBe(true); // byte-identical, stat blocks included
    },
  );

  it("reports what it does not handle instead of guessing", () => {
    const variants: Array<[string, (dir: string, env: NodeJS.ProcessEnv) => void, RegExp]> = [
      ["split index", (dir, env) => git(dir, env, "update-index", "--split-index"), /required index extension "link"/],
      [
        "intent-to-add",
        (dir, env) => (writeFileSync(join(dir, "later"), "l\n"), git(dir, env, "add", "-N", "later")),
        /extended flags/,
      ],
      ["skip-worktree", (dir, env) => git(dir, env, "update-index", "--skip-worktree", "a0"), /extended flags/],
      [
        "unmerged",
        (dir, env) => {
          const blob = git(dir, env, "hash-object", "-w", "a0").trim();
          execWithInput(
            dir,
            env,
            ["update-index", "--index-info"],
            `0 ${"0".repeat(40)}\ta0\n100644 ${blob} 1\ta0\n100644 ${blob} 2\ta0\n`,
          );
        },
        /unmerged/,
      ],
    ];
    for (const [name, make, reason] of variants) {
      const { dir, env, index } = repo();
      populate(dir);
      git(dir, env, "add", "-A");
      make(dir, env);
      const parsed = parseIndex(readFileSync(index));
      expect(parsed, name).toMatchObject({ supported: false, reason: expect.stringMatching(reason) });
    }
    const { dir, env, index } = repo();
    populate(dir);
    git(dir, env, "add", "-A");
    const bytes = readFileSync(index);
    const flipped = Buffer.from(bytes);
    flipped[20] = (flipped[20] ?? 0) ^ 0xff;
    expect(parseIndex(flipped)).toMatchObject({ supported: false, reason: "index checksum mismatch" });
    expect(parseIndex(Buffer.from("not an index at all, clearly"))).toMatchObject({ supported: false });
    expect(parseIndex(bytes.subarray(0, 40))).toMatchObject({ supported: false });
  });

  it("serializes an empty index as git does", () => {
    const { dir, env, index } = repo();
    writeFileSync(join(dir, "f"), "f\n");
    git(dir, env, "add", "f");
    git(dir, env, "rm", "-q", "--cached", "f");
    expect(serializeIndex([] as IndexEntry[]).equals(readFileSync(index))).toBe(true);
  });
});

function execWithInput(cwd: string, env: NodeJS.ProcessEnv, args: string[], input: string): void {
  execFileSync("git", args, { cwd, env, input });
}
