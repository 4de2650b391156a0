// Git tree objects built in-process from index entries, byte-identical to what `git write-tree`
// writes (cache-tree.c), for the publication hot path (see git-publication.ts and git-index.ts for
// why a git process is avoided). Like write-tree it reuses the index's cache tree: a directory
// whose cached tree is still valid, below which nothing was overlaid, and whose object the
// caller knows to exist (write-tree checks the object database there), is neither rehashed nor
// rewritten, so the cost follows the paths a cohort touched, not the size of the store.
// Pure: returns the trees it computed and the cache tree of the result; the caller writes them.

import { compareSubtreeNames, type CacheTreeNode } from "./git-cache-tree.ts";
import { gitObjectId } from "./git-objects.ts";
import type { IndexEntry } from "./git-index.ts";

export interface BuiltTree {
  /** Directory path (latin1 bytes, "" for the root). */
  readonly path: string;
  readonly id: string;
  readonly body: Buffer;
}

export interface TreeBuild {
  /** The root tree id. */
  readonly root: string;
  /** The trees computed (not reused from the cache), children before parents. */
  readonly computed: BuiltTree[];
  /** The complete, valid cache tree of the result (to write back into the index). */
  readonly cacheTree: CacheTreeNode;
}

export class TreeConflictError extends Error {
  readonly path: string;
  constructor(path: string) {
    super(`${Buffer.from(path, "latin1").toString("utf8")} is both a file and a directory in the staged index`);
    this.name = "TreeConflictError";
    this.path = path;
  }
}

const TREE_MODE = 0o40000;

interface Child {
  readonly name: string;
  readonly mode: number;
  readonly oid: string;
}

export interface BuildOptions {
  /** The index's cache tree. */
  readonly cached?: CacheTreeNode | null;
  /** Paths (latin1) changed after the cache tree was written: their directories are rebuilt. */
  readonly changed?: Iterable<string>;
  /** Whether a cached tree's object is known to exist; only such trees are reused. */
  readonly exists?: (oid: string) => boolean;
}

/**
 * Builds the tree hierarchy of stage-0 `entries` given in index order (sorted by path bytes).
 * Throws TreeConflictError for a file/directory conflict.
 */
export function buildTrees(entries: readonly IndexEntry[], options: BuildOptions = {}): TreeBuild {
  const dirty = new Set<string>([""]);
  for (const path of options.changed ?? []) {
    for (let slash = path.indexOf("/"); slash >= 0; slash = path.indexOf("/", slash + 1))
      dirty.add(path.slice(0, slash + 1));
  }
  const computed: BuiltTree[] = [];
  // The root is always rebuilt: `dirty` holds it, and it is one small tree.
  const cacheTree = build(
    { entries, dirty, computed, exists: options.exists ?? (() => false) },
    0,
    entries.length,
    "",
    "",
    options.cached ?? undefined,
  );
  return { root: cacheTree.oid!, computed, cacheTree };
}

/** Every tree id a (valid) cache tree names. */
export function cacheTreeIds(node: CacheTreeNode, into = new Set<string>()): Set<string> {
  if (node.oid !== null) into.add(node.oid);
  for (const child of node.children) cacheTreeIds(child, into);
  return into;
}

interface BuildState {
  readonly entries: readonly IndexEntry[];
  readonly dirty: ReadonlySet<string>;
  readonly computed: BuiltTree[];
  readonly exists: (oid: string) => boolean;
}

/**
 * A cached directory node that can stand for entries[start, end) (end within the parent's run) under `dir` unchanged.
 */
function reusable(state: BuildState, node: CacheTreeNode, start: number, end: number, dir: string): boolean {
  return (
    node.entryCount > 0 &&
    node.oid !== null &&
    !state.dirty.has(dir) &&
    state.exists(node.oid) &&
    spans(state.entries, start, end, dir)
  );
}

/** entries[start, end) is exactly the run of entries under `dir`. */
function spans(entries: readonly IndexEntry[], start: number, end: number, dir: string): boolean {
  return (
    entries[start]!.path.startsWith(dir) &&
    entries[end - 1]!.path.startsWith(dir) &&
    (end === entries.length || !entries[end]!.path.startsWith(dir)) &&
    (start === 0 || !entries[start - 1]!.path.startsWith(dir))
  );
}

/** Builds the tree of entries[start, end), which all lie under `prefix` ("" or "dir/"). */
function build(
  state: BuildState,
  start: number,
  end: number,
  prefix: string,
  name: string,
  cached: CacheTreeNode | undefined,
): CacheTreeNode {
  const { entries } = state;
  const cachedChildren = new Map((cached?.children ?? []).map((child) => [child.name, child]));
  const children: Child[] = [];
  const subtrees: CacheTreeNode[] = [];
  const names = new Set<string>();
  let i = start;
  while (i < end) {
    const entry = entries[i]!;
    const slash = entry.path.indexOf("/", prefix.length);
    const childName = slash < 0 ? entry.path.slice(prefix.length) : entry.path.slice(prefix.length, slash);
    if (names.has(childName)) throw new TreeConflictError(prefix + childName);
    names.add(childName);
    if (slash < 0) {
      children.push({ name: childName, mode: entry.mode, oid: entry.oid });
      i++;
      continue;
    }
    const dir = `${prefix}${childName}/`;
    const cachedChild = cachedChildren.get(childName);
    let node: CacheTreeNode;
    let j: number;
    if (
      cachedChild &&
      i + cachedChild.entryCount <= end &&
      reusable(state, cachedChild, i, i + cachedChild.entryCount, dir)
    ) {
      j = i + cachedChild.entryCount; // a valid cached subtree: skip its entries without looking at them
      node = cachedChild;
    } else {
      j = i + 1; // entries under `dir/` are contiguous in index order
      while (j < end && entries[j]!.path.startsWith(dir)) j++;
      node = build(state, i, j, dir, childName, cachedChild);
    }
    children.push({ name: childName, mode: TREE_MODE, oid: node.oid! });
    subtrees.push(node);
    i = j;
  }
  // Git orders tree entries by name, a directory's name compared as if it ended in "/".
  const key = (child: Child) => (child.mode === TREE_MODE ? `${child.name}/` : child.name);
  children.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const body = Buffer.concat(
    children.flatMap((child) => [
      Buffer.from(`${child.mode.toString(8)} ${child.name}\0`, "latin1"),
      Buffer.from(child.oid, "hex"),
    ]),
  );
  const id = gitObjectId("tree", body, "sha1");
  state.computed.push({ path: prefix.slice(0, -1), id, body });
  subtrees.sort((a, b) => compareSubtreeNames(a.name, b.name));
  return { name, entryCount: end - start, oid: id, children: subtrees };
}
