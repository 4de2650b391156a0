import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import {
  compareSubtreeNames,
  parseCacheTree,
  serializeCacheTree,
} from "../../../../storage/git/plumbing/git-cache-tree.ts";
import { TempDirs, git, initRepo } from "../../../support/store-fixtures.ts";

const temps = new TempDirs();
afterEach(() => temps.cleanup());

/** The TREE extension's data in an index file (null when absent). */
function treeExtension(index: Buffer): Buffer | null {
  let offset = 12;
  const count = index.readUInt32BE(8);
  for (let i = 0; i < count; i++) {
    const nameLength = index.readUInt16BE(offset + 60) & 0xfff;
    offset += (62 + nameLength + 8) & ~7;
  }
  while (offset < index.length - 20) {
    const signature = index.toString("latin1", offset, offset + 4);
    const size = index.readUInt32BE(offset + 4);
    if (signature === "TREE") return index.subarray(offset + 8, offset + 8 + size);
    offset += 8 + size;
  }
  return null;
}

describe("git cache tree", () => {
  it("reads git's TREE extension, valid and partly invalidated, and writes it back byte for byte", () => {
    const { dir, env, index } = initRepo(temps, "sf-cachetree-");
    const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: dir,
      env,
      input: "x\n",
      encoding: "utf8",
    }).trim();
    let info = "";
    for (const path of ["a/b/c", "a/b/d", "a/e", "bb/f", "c", "zz/y/x", "z/1"]) info += `100644 ${blob}\t${path}\0`;
    execFileSync("git", ["update-index", "-z", "--add", "--index-info"], { cwd: dir, env, input: info });
    const root = git(dir, env, "write-tree").trim();
    const valid = treeExtension(readFileSync(index))!;
    const tree = parseCacheTree(valid)!;
    expect(tree).toMatchObject({ name: "", entryCount: 7, oid: root });
    // git's own order of subtrees: shorter names first (a, z, bb, zz)
    expect(tree.children.map((c) => c.name)).toEqual(["a", "z", "bb", "zz"]);
    expect(tree.children[0]).toMatchObject({ entryCount: 3, oid: git(dir, env, "rev-parse", `${root}:a`).trim() });
    expect(serializeCacheTree(tree).equals(valid)).toBe(true);
    // git invalidates a path it changes, up to the root
    execFileSync("git", ["update-index", "-z", "--index-info"], { cwd: dir, env, input: `100755 ${blob}\ta/b/d\0` });
    const partial = treeExtension(readFileSync(index))!;
    const invalidated = parseCacheTree(partial)!;
    expect(invalidated).toMatchObject({ entryCount: -1, oid: null });
    expect(invalidated.children[0]).toMatchObject({ name: "a", entryCount: -1, oid: null });
    expect(invalidated.children[1]).toMatchObject({ name: "z", entryCount: 1 });
    expect(serializeCacheTree(invalidated).equals(partial)).toBe(true);
  });

  it("orders subtrees like git's subtree_name_cmp and rejects malformed data", () => {
    expect(["bb", "a", "zz", "z", "ab"].sort(compareSubtreeNames)).toEqual(["a", "z", "ab", "bb", "zz"]);
    expect(parseCacheTree(Buffer.from("\u00002 0\n"))).toBeNull(); // valid entry without its object id
    expect(parseCacheTree(Buffer.from("\u0000-1 1\n"))).toBeNull(); // a subtree announced but missing
    expect(parseCacheTree(Buffer.from("\u0000x 0\n"))).toBeNull();
    expect(parseCacheTree(Buffer.from("\u0000-1 0\ntrailing"))).toBeNull();
    expect(parseCacheTree(Buffer.from("\u0000-1 0\n"))).toEqual({ name: "", entryCount: -1, oid: null, children: [] });
  });
});
