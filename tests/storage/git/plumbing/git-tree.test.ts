import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { indexPathOf, overlayEntries, parseIndex, serializeIndex } from "../../../../storage/git/plumbing/git-index.ts";
import { TreeConflictError, buildTrees } from "../../../../storage/git/plumbing/git-tree.ts";
import { TempDirs, git, initRepo } from "../../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

const repo = () => initRepo(temps, "sf-tree-");

function entriesOf(index: string) {
  const parsed = parseIndex(readFileSync(index));
  if (!parsed.supported) throw new Error(parsed.reason);
  return parsed.entries;
}

/** Every tree git write-tree produced for the same index: `<id> <path>` of the root and each subtree. */
function gitTrees(dir: string, env: NodeJS.ProcessEnv): { root: string; bodies: Map<string, Buffer> } {
  const root = git(dir, env, "write-tree").trim();
  const listed = git(dir, env, "ls-tree", "-r", "-t", "--format=%(objecttype) %(objectname)", root).split("\n");
  const ids = [root, ...listed.filter((line) => line.startsWith("tree ")).map((line) => line.slice(5))];
  return {
    root,
    bodies: new Map(ids.map((id) => [id, execFileSync("git", ["cat-file", "tree", id], { cwd: dir, env })])),
  };
}

describe("git trees", () => {
  it(
    "builds exactly the trees git write-tree writes (names " + "sorting around '/', modes, symlinks, gitlinks, UTF-8)",
    () => {
      const { dir, env, index } = repo();
      for (const path of [
        "a/b/deep.json",
        "a/x",
        "a-b/y",
        "a.b",
        "a0",
        "grüße/ü.txt",
        "z/.hidden",
        "--cwd--/2026_x/meta.json",
        "--cwd--/checkpoint.json",
      ]) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), `${path}\n`);
      }
      writeFileSync(join(dir, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
      symlinkSync("a/x", join(dir, "link"));
      git(dir, env, "add", "-A");
      git(
        dir,
        env,
        "update-index",
        "--add",
        "--cacheinfo",
        `160000,${git(dir, env, "hash-object", "-w", "a0").trim()},vendor/sub`,
      );
      const built = buildTrees(entriesOf(index));
      const expected = gitTrees(dir, env);
      expect(built.root).toBe(expected.root);
      expect(new Map(built.computed.map((t) => [t.id, t.body]))).toEqual(expected.bodies);
      expect(built.computed.map((t) => Buffer.from(t.path, "latin1").toString("utf8")).sort()).toEqual([
        "",
        "--cwd--",
        "--cwd--/2026_x",
        "a",
        "a-b",
        "a/b",
        "grüße",
        "vendor",
        "z",
      ]);
      // the cache tree of the result is exactly the one git write-tree records in the index
      const parsed = parseIndex(readFileSync(index));
      if (!parsed.supported) throw new Error(parsed.reason);
      expect(parsed.cacheTree).toEqual(built.cacheTree);
      expect(serializeIndex(parsed.entries, 2, built.cacheTree).equals(readFileSync(index))).toBe(true);
    },
  );

  it("reuses the index's valid cache tree where nothing changed below, and rebuilds only the touched paths", () => {
    const { dir, env, index } = repo();
    // (entries staged through update-index carry no stat data, so none is "racily clean": with
    // worktree files as fresh as the index, git add re-hashes them and invalidates every path)
    const staged = git(dir, env, "hash-object", "-w", "--stdin", "--no-filters").trim();
    let info = "";
    for (let c = 0; c < 4; c++)
      for (let s = 0; s < 5; s++)
        for (const f of ["checkpoint.json", "meta.json"]) info += `100644 ${staged}\t--c${c}--/s${s}/${f}\0`;
    execFileSync("git", ["update-index", "-z", "--add", "--index-info"], { cwd: dir, env, input: info });
    git(dir, env, "write-tree"); // the cache tree is now valid everywhere
    // git invalidates the paths it changes itself; the overlay names its own
    const edited = execFileSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: dir,
      env,
      input: "edited by git\n",
      encoding: "utf8",
    }).trim();
    execFileSync("git", ["update-index", "-z", "--index-info"], {
      cwd: dir,
      env,
      input: `100644 ${edited}\t--c1--/s2/meta.json\0`,
    });
    const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: dir,
      env,
      input: "prepared\n",
      encoding: "utf8",
    }).trim();
    const overlay = new Map<string, string | null>([
      ["--c3--/s4/checkpoint.json", blob],
      ["--c0--/s0/meta.json", null],
      ["--c2--/new/meta.json", blob],
    ]);
    const parsed = parseIndex(readFileSync(index));
    if (!parsed.supported) throw new Error(parsed.reason);
    expect(parsed.cacheTree?.entryCount).toBe(-1); // invalidated up to the root…
    // …and only along the edited path
    expect(parsed.cacheTree?.children.find((c) => c.name === "--c0--")?.entryCount).toBe(10);
    const entries = overlayEntries(parsed.entries, overlay);
    const reused = buildTrees(entries, {
      cached: parsed.cacheTree,
      changed: [...overlay.keys()].map(indexPathOf),
      exists: () => true,
    });
    const rebuilt = buildTrees(entries);
    expect(reused.root).toBe(rebuilt.root);
    expect(reused.cacheTree).toEqual(rebuilt.cacheTree);
    // root, the four touched cwd dirs' paths: --c0--, --c0--/s0, --c1--, --c1--/s2, --c2--, --c2--/new,
    // --c3--, --c3--/s4
    expect(reused.computed.map((t) => t.path).sort()).toEqual([
      "",
      "--c0--",
      "--c0--/s0",
      "--c1--",
      "--c1--/s2",
      "--c2--",
      "--c2--/new",
      "--c3--",
      "--c3--/s4",
    ]);
    expect(rebuilt.computed).toHaveLength(1 + 4 + 20 + 1);
    // a cached tree whose object is not known to exist is rebuilt, not trusted
    expect(
      buildTrees(entries, {
        cached: parsed.cacheTree,
        changed: [...overlay.keys()].map(indexPathOf),
        exists: () => false,
      }).computed,
    ).toHaveLength(rebuilt.computed.length);
    let overlayInfo = "";
    for (const [path, id] of overlay)
      overlayInfo += id === null ? `0 ${"0".repeat(40)}\t${path}\0` : `100644 ${id}\t${path}\0`;
    execFileSync("git", ["update-index", "-z", "--index-info"], { cwd: dir, env, input: overlayInfo });
    expect(reused.root).toBe(git(dir, env, "write-tree").trim());
  });

  it("builds the empty tree for an empty index", () => {
    const { dir, env } = repo();
    expect(buildTrees([]).root).toBe(git(dir, env, "write-tree").trim());
  });

  it(
    "agrees with git write-tree on random path sets and " +
      "overlays, with and without a partly invalidated cache tree",
    () => {
      const { dir, env, index } = repo();
      const segment = fc.constantFrom("a", "a.b", "a-b", "a0", "b", "ü", "x_y", "--k--");
      const pathArb = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("/"));
      fc.assert(
        fc.property(
          fc.uniqueArray(pathArb, { minLength: 1, maxLength: 12 }),
          fc.uniqueArray(pathArb, { maxLength: 4 }),
          (paths, overlaid) => {
            rmSync(index, { force: true });
            // keep only paths that do not collide file-vs-directory, as a worktree must
            const files = paths.filter((p) => !paths.some((q) => q.startsWith(`${p}/`)));
            const blob = git(dir, env, "hash-object", "-w", "--stdin", "--no-filters").trim();
            let info = "";
            for (const path of files) info += `100644 ${blob}\t${path}\0`;
            execFileSync("git", ["update-index", "-z", "--add", "--index-info"], { cwd: dir, env, input: info });
            git(dir, env, "write-tree"); // a valid cache tree…
            const touched = files.filter((_, i) => i % 3 === 0);
            const other = git(dir, env, "hash-object", "-w", "--stdin", "--no-filters").trim();
            let retouch = "";
            for (const path of touched) retouch += `100755 ${other}\t${path}\0`;
            // …that git invalidates along these paths
            if (retouch) execFileSync("git", ["update-index", "-z", "--index-info"], { cwd: dir, env, input: retouch });
            const overlay = new Map(
              overlaid
                .filter((p) => ![...files, ...overlaid].some((q) => q.startsWith(`${p}/`) || p.startsWith(`${q}/`)))
                .map((p, i) => [p, i % 2 ? null : blob] as const),
            );
            const parsed = parseIndex(readFileSync(index));
            if (!parsed.supported) throw new Error(parsed.reason);
            const entries = overlayEntries(parsed.entries, overlay);
            const ours = buildTrees(entries).root;
            expect(
              buildTrees(entries, {
                cached: parsed.cacheTree,
                changed: [...overlay.keys()].map(indexPathOf),
                exists: () => true,
              }).root,
            ).toBe(ours);
            let overlayInfo = "";
            for (const [path, id] of overlay)
              overlayInfo += id === null ? `0 ${"0".repeat(40)}\t${path}\0` : `100644 ${id}\t${path}\0`;
            if (overlayInfo)
              execFileSync("git", ["update-index", "-z", "--index-info"], { cwd: dir, env, input: overlayInfo });
            expect(ours).toBe(git(dir, env, "write-tree").trim());
          },
        ),
        { numRuns: 40 },
      );
    },
  );

  it("refuses a path that is both a file and a directory", () => {
    const stat = Buffer.alloc(40);
    const entry = (path: string) => ({
      path: indexPathOf(path),
      stat,
      mode: 0o100644,
      oid: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
      assumeValid: false,
    });
    expect(() => buildTrees([entry("a"), entry("a-b"), entry("a/x")])).toThrow(TreeConflictError);
    expect(() => buildTrees([entry("a"), entry("a-b"), entry("a/x")])).toThrow(/a is both a file and a directory/);
  });
});
