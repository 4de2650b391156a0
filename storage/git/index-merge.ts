// Pure index-entry work of a Git publication beside a user's own git: merging the entries a user
// staged while a publication ran into its isolated index, and staging store files again from
// their exact bytes after `git add` ran them through the user's attributes.

import { isScopeFilePath } from "../layout.ts";
import { indexPathOf, type IndexEntry, type IndexVersion } from "./plumbing/git-index.ts";

export const EMPTY_INDEX = {
  supported: true,
  version: 2 as IndexVersion,
  entries: [] as IndexEntry[],
  cacheTree: null,
};

function sameEntry(a: IndexEntry | undefined, b: IndexEntry | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.mode === b.mode && a.oid === b.oid;
}

export function sameEntries(a: readonly IndexEntry[], b: readonly IndexEntry[]): boolean {
  return a.length === b.length && a.every((entry, i) => entry.path === b[i]!.path && sameEntry(entry, b[i]));
}

/**
 * `theirs` (the index as it is now) with what this publication changed from `seed` to `mine`
 * laid over it. A path both changed keeps this publication's entry when it is a store file (its
 * exact bytes are live) and the user's entry otherwise.
 */
export function mergeIndexEntries(
  seed: readonly IndexEntry[],
  mine: readonly IndexEntry[],
  theirs: readonly IndexEntry[],
): IndexEntry[] {
  const before = new Map(seed.map((entry) => [entry.path, entry]));
  const after = new Map(mine.map((entry) => [entry.path, entry]));
  const result = new Map(theirs.map((entry) => [entry.path, entry]));
  for (const path of new Set([...before.keys(), ...after.keys()])) {
    const entry = after.get(path);
    if (sameEntry(before.get(path), entry)) continue;
    const restagedByUser = !sameEntry(result.get(path), before.get(path));
    if (restagedByUser && !isScopeFilePath(Buffer.from(path, "latin1").toString("utf8"))) continue;
    if (entry) result.set(path, entry);
    else result.delete(path);
  }
  return [...result.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The store files `git add -v` staged anew (its untranslated `add '<path>'` lines): their bytes
 * went through the attributes' filters, or their mode changed. A misread line only restages a
 * store file from its exact bytes again, which is harmless.
 */
export function storeFilesAdded(out: string): string[] {
  const paths: string[] = [];
  for (const line of out.split("\n")) {
    const match = /^add '(.*)'$/.exec(line);
    if (match?.[1] !== undefined && isScopeFilePath(match[1]) && !/[\n\r]/.test(match[1])) paths.push(match[1]);
  }
  return paths;
}

/**
 * Restaged store files laid onto the staged entries as regular files with their exact blob; an
 * entry keeps the stat data `git add` recorded for the live file (so git does not re-filter it).
 * `added`: restaged paths without an entry (staged fresh, with a zero stat block).
 */
export function restageEntries(
  entries: readonly IndexEntry[],
  restaged: ReadonlyMap<string, string | null>,
): { kept: IndexEntry[]; added: Map<string, string | null> } {
  if (restaged.size === 0) return { kept: [...entries], added: new Map() };
  const byIndexPath = new Map([...restaged].map(([path, oid]) => [indexPathOf(path), { path, oid }]));
  const seen = new Set<string>();
  const kept: IndexEntry[] = [];
  for (const entry of entries) {
    const item = byIndexPath.get(entry.path);
    if (!item) {
      kept.push(entry);
      continue;
    }
    seen.add(entry.path);
    if (item.oid !== null)
      kept.push({ path: entry.path, stat: entry.stat, mode: 0o100644, oid: item.oid, assumeValid: entry.assumeValid });
  }
  const added = new Map([...byIndexPath].filter(([key]) => !seen.has(key)).map(([, item]) => [item.path, item.oid]));
  return { kept, added };
}
