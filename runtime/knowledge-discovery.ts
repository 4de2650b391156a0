// Knowledge discovery (spec 001, "Artifact compilation and acquisition"): the Markdown sources
// State Flow compiles artifacts from, found beneath one canonical root (default
// `<agentDir>/knowledge`). It sees only regular files whose name ends in lowercase `.md`, at any
// depth, treated alike; symlinks (to files or directories) are skipped, so nothing outside the
// root is ever read. Bytes are hashed and counted as opaque data: no body is decoded or kept. A
// missing root means no candidates. The root need not be a Git repository.

import { closeSync, constants as fsConstants, fstatSync, openSync, readFileSync } from "node:fs";
import { readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { sha256Hex } from "../storage/fs/fs-safe.ts";

export interface KnowledgeSource {
  /** Absolute path beneath the canonical root: the artifact key. */
  readonly path: string;
  /** `sha256:<64 lowercase hex>` of the exact bytes. */
  readonly hash: string;
  readonly bytes: number;
}

export interface KnowledgeDiscovery {
  /** The canonical root (symlinks in the root's own path resolved), or the given one when missing. */
  readonly root: string;
  /** false: the root does not exist (no candidates). */
  readonly exists: boolean;
  /** Sorted by path. */
  readonly sources: readonly KnowledgeSource[];
  /** What was passed over, and why (symlinks, unreadable entries). */
  readonly skipped: readonly { readonly path: string; readonly reason: string }[];
}

/**
 * Files hashed per turn of the event loop. Node's asynchronous readFile costs four thread-pool
 * round trips per file (3.4× a plain synchronous walk over 5,000 files, bench/knowledge.ts); reading
 * synchronously in small slices, yielding between them, is as fast as the plain walk and keeps Pi
 * responsive (a slice of 2 KiB files takes about 4 ms).
 */
const SLICE = 256;
/** Opening never follows a symlink swapped in after the walk, nor blocks on a FIFO swapped in. */
const OPEN_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;

export async function discoverKnowledge(root: string): Promise<KnowledgeDiscovery> {
  let canonical: string;
  try {
    canonical = await realpath(root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { root, exists: false, sources: [], skipped: [] };
    throw error;
  }
  const skipped: { path: string; reason: string }[] = [];
  const files = await markdownFiles(canonical, skipped);
  const sources: KnowledgeSource[] = [];
  for (let i = 0; i < files.length; i += SLICE) {
    if (i > 0) await new Promise((resume) => setImmediate(resume));
    for (const path of files.slice(i, i + SLICE)) {
      const source = hashSource(path, skipped);
      if (source) sources.push(source);
    }
  }
  sources.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { root: canonical, exists: true, sources, skipped };
}

/**
 * Regular `*.md` files below `dir`. Node's recursive listing reports a symlinked directory as a
 * symlink and does not descend into it, so nothing outside the root is listed.
 */
async function markdownFiles(dir: string, skipped: { path: string; reason: string }[]): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch (error) {
    skipped.push({ path: dir, reason: `unreadable directory (${(error as NodeJS.ErrnoException).code})` });
    return [];
  }
  const found: string[] = [];
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isSymbolicLink()) skipped.push({ path, reason: "symlink" });
    else if (entry.isFile() && entry.name.endsWith(".md")) found.push(path);
  }
  return found;
}

/** Hash and size of one file; anything but the regular file the walk saw is skipped. */
function hashSource(path: string, skipped: { path: string; reason: string }[]): KnowledgeSource | null {
  let fd: number | undefined;
  try {
    fd = openSync(path, OPEN_FLAGS);
    if (!fstatSync(fd).isFile()) {
      skipped.push({ path, reason: "not a regular file" });
      return null;
    }
    const bytes = readFileSync(fd);
    return { path, hash: `sha256:${sha256Hex(bytes)}`, bytes: bytes.length };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    skipped.push({ path, reason: code === "ELOOP" ? "symlink" : `unreadable (${code})` });
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `sha256:<hex>` of the file's bytes now (a symlink is not followed), or null when it cannot be read. */
export function sourceHash(path: string): string | null {
  return hashSource(path, [])?.hash ?? null;
}
