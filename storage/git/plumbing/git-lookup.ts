// Paths at a commit, resolved in-process from loose objects, as the lines `git cat-file
// --batch-check` prints for them (without the sizes, which the caller does not read).
//
// Why: a session whose store another session advanced (the normal case on a shared store) reads
// the members' blobs at the new HEAD before it publishes; through git that is one more process
// per cohort. The objects State Flow and git's porcelain write are loose until a `git gc` packs
// them; wherever an object is not loose, or anything is unusual (a sha256 repository, a symlink
// or submodule at a member's path, an object that does not hash to its name), this returns null
// and the caller asks git.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";

interface LooseObject {
  readonly type: string;
  readonly body: Buffer;
}

/** A sha1 loose object, verified against its name; null when it is not loose or not readable as one. */
export function readLooseObjectSync(objectsDir: string, id: string): LooseObject | null {
  if (!/^[0-9a-f]{40}$/.test(id)) return null;
  let raw: Buffer;
  try {
    raw = inflateSync(readFileSync(join(objectsDir, id.slice(0, 2), id.slice(2))));
  } catch {
    return null;
  }
  if (createHash("sha1").update(raw).digest("hex") !== id) return null;
  const nul = raw.indexOf(0);
  const header = nul < 0 ? "" : raw.subarray(0, nul).toString("latin1");
  const match = /^(blob|tree|commit|tag) (\d+)$/.exec(header);
  if (!match || Number(match[2]) !== raw.length - nul - 1) return null;
  return { type: match[1]!, body: raw.subarray(nul + 1) };
}

interface TreeEntry {
  readonly mode: string;
  readonly id: string;
}

/** A tree object's entries by name; null when the body is not a well-formed tree. */
export function parseTree(body: Buffer): Map<string, TreeEntry> | null {
  const entries = new Map<string, TreeEntry>();
  for (let at = 0; at < body.length;) {
    const space = body.indexOf(0x20, at);
    const nul = body.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > body.length) return null;
    const mode = body.subarray(at, space).toString("latin1");
    entries.set(body.subarray(space + 1, nul).toString("utf8"), {
      mode,
      id: body.subarray(nul + 1, nul + 21).toString("hex"),
    });
    at = nul + 21;
  }
  return entries;
}

const TREE_MODE = "40000";
const FILE_MODES = new Set(["100644", "100755"]);

/**
 * What `git cat-file --batch-check` prints, sizes aside, for `HEAD` and `HEAD:<path>` of each path
 * while HEAD is `revision`: `<id> commit`, then `<id> blob`, `<id> tree` or `HEAD:<path> missing`
 * per path. null where only git can answer exactly.
 */
export function batchCheckAtCommit(objectsDir: string, revision: string, paths: readonly string[]): string | null {
  const commit = readLooseObjectSync(objectsDir, revision);
  if (commit?.type !== "commit") return null;
  const tree = /^tree ([0-9a-f]{40})\n/.exec(commit.body.toString("latin1"))?.[1];
  if (!tree) return null;
  const trees = new Map<string, Map<string, TreeEntry> | null>();
  const treeAt = (id: string) => {
    if (!trees.has(id)) {
      const object = readLooseObjectSync(objectsDir, id);
      trees.set(id, object?.type === "tree" ? parseTree(object.body) : null);
    }
    return trees.get(id)!;
  };
  const lines = [`${revision} commit`];
  for (const path of paths) {
    let entries = treeAt(tree);
    let line: string | undefined;
    const parts = path.split("/");
    for (const [index, name] of parts.entries()) {
      if (entries === null) return null;
      const entry = entries.get(name);
      if (!entry) {
        line = `HEAD:${path} missing`;
        break;
      }
      if (index === parts.length - 1) {
        if (entry.mode === TREE_MODE) line = `${entry.id} tree`;
        else if (FILE_MODES.has(entry.mode)) line = `${entry.id} blob`;
        else return null;
      } else if (entry.mode === TREE_MODE) entries = treeAt(entry.id);
      else {
        line = `HEAD:${path} missing`;
        break;
      }
    }
    lines.push(line!);
  }
  return `${lines.join("\n")}\n`;
}
