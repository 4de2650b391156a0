// Git's cache-tree index extension ("TREE"), read and written in-process: for every directory of
// the index, how many entries it spans and the id of its tree object, or "invalid" where an
// entry below it changed since. `git write-tree` reuses the valid ones instead of rehashing the
// whole index; git-tree.ts does the same, so a cohort in a store with thousands of sessions
// rebuilds only the trees on the paths it touched (format: Documentation/gitformat-index.txt,
// cache-tree.c write_one/read_one).

/** One directory of the cache tree. `name` is the path component (latin1 bytes; "" for the root). */
export interface CacheTreeNode {
  readonly name: string;
  /** Index entries the directory spans; -1 = invalidated (then `oid` is null). */
  readonly entryCount: number;
  readonly oid: string | null;
  readonly children: readonly CacheTreeNode[];
}

export const CACHE_TREE_SIGNATURE = "TREE";
const OID_BYTES = 20;

/** Decodes the TREE extension's data; null when it is malformed (the caller then recomputes everything). */
export function parseCacheTree(data: Buffer): CacheTreeNode | null {
  let offset = 0;
  const readNode = (depth: number): CacheTreeNode | null => {
    if (depth > 4096) return null;
    const nul = data.indexOf(0, offset);
    if (nul < 0) return null;
    const name = data.toString("latin1", offset, nul);
    const newline = data.indexOf(0x0a, nul + 1);
    if (newline < 0) return null;
    const match = /^(-?\d+) (\d+)$/.exec(data.toString("latin1", nul + 1, newline));
    if (!match) return null;
    const entryCount = Number(match[1]);
    const subtrees = Number(match[2]);
    offset = newline + 1;
    let oid: string | null = null;
    if (entryCount >= 0) {
      if (offset + OID_BYTES > data.length) return null;
      oid = data.toString("hex", offset, offset + OID_BYTES);
      offset += OID_BYTES;
    }
    const children: CacheTreeNode[] = [];
    for (let i = 0; i < subtrees; i++) {
      const child = readNode(depth + 1);
      if (child === null) return null;
      children.push(child);
    }
    return { name, entryCount: entryCount < 0 ? -1 : entryCount, oid, children };
  };
  const root = readNode(0);
  return root !== null && offset === data.length ? root : null;
}

/** git's order of subtrees in the extension: shorter names first, then bytewise (subtree_name_cmp). */
export function compareSubtreeNames(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Encodes a cache tree as the TREE extension's data (children must be in compareSubtreeNames order). */
export function serializeCacheTree(root: CacheTreeNode): Buffer {
  const parts: Buffer[] = [];
  const write = (node: CacheTreeNode) => {
    parts.push(Buffer.from(`${node.name}\0${node.entryCount} ${node.children.length}\n`, "latin1"));
    if (node.entryCount >= 0 && node.oid !== null) parts.push(Buffer.from(node.oid, "hex"));
    for (const child of node.children) write(child);
  };
  write(root);
  return Buffer.concat(parts);
}
