// Git tree objects built in-process from index entries, byte-identical to what `git write-tree`
// writes (cache-tree.c), for the publication hot path (see git-backend.ts and git-index.ts for
// why a git process is avoided). Pure: returns every tree of the hierarchy with its id and body;
// the caller decides which ones must still be written to the object database.

import { gitObjectId } from "./git-objects.ts";
import type { IndexEntry } from "./git-index.ts";

export interface BuiltTree {
  /** Directory path (latin1 bytes, "" for the root). */
  readonly path: string;
  readonly id: string;
  readonly body: Buffer;
}

export class TreeConflictError extends Error {
  readonly path: string;
  constructor(path: string) {
    super(`${Buffer.from(path, "latin1").toString("utf8")} is both a file and a directory in the staged index`);
    this.name = "TreeConflictError";
    this.path = path;
  }
}

interface Child {
  readonly name: string;
  readonly mode: number; // 0o40000 for a subtree
  readonly oid: string;
}

/**
 * Builds the tree hierarchy of stage-0 `entries` given in index order (sorted by path bytes).
 * The root tree is the last element. Throws TreeConflictError for a file/directory conflict.
 */
export function buildTrees(entries: readonly IndexEntry[]): BuiltTree[] {
  const trees: BuiltTree[] = [];
  build(entries, 0, entries.length, "", trees);
  return trees;
}

/** Builds the tree of entries[start, end), which all lie under `prefix` ("" or "dir/"); returns its id. */
function build(entries: readonly IndexEntry[], start: number, end: number, prefix: string, out: BuiltTree[]): string {
  const children: Child[] = [];
  const names = new Set<string>();
  let i = start;
  while (i < end) {
    const entry = entries[i]!;
    const rest = entry.path.slice(prefix.length);
    const slash = rest.indexOf("/");
    const name = slash < 0 ? rest : rest.slice(0, slash);
    if (names.has(name)) throw new TreeConflictError(prefix + name);
    names.add(name);
    if (slash < 0) {
      children.push({ name, mode: entry.mode, oid: entry.oid });
      i++;
      continue;
    }
    // Entries under `name/` are contiguous in index order.
    const dir = `${prefix}${name}/`;
    let j = i + 1;
    while (j < end && entries[j]!.path.startsWith(dir)) j++;
    children.push({ name, mode: 0o40000, oid: build(entries, i, j, dir, out) });
    i = j;
  }
  // Git orders tree entries by name, a directory's name compared as if it ended in "/".
  const key = (child: Child) => (child.mode === 0o40000 ? `${child.name}/` : child.name);
  children.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const body = Buffer.concat(children.flatMap((child) => [Buffer.from(`${child.mode.toString(8)} ${child.name}\0`, "latin1"), Buffer.from(child.oid, "hex")]));
  const id = gitObjectId("tree", body, "sha1");
  out.push({ path: prefix.slice(0, -1), id, body });
  return id;
}
