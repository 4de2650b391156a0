// Git's index file (the DIRC format, versions 2 and 3), read, overlaid and written in-process for
// the publication hot path (see git-publication.ts). Why hand-written instead of
// `git update-index --index-info` + `git write-tree`: those are two git processes per cohort
// (≈ 6 ms each on the 2-core bench machine, more than the rest of the publication together),
// while parsing and rewriting the isolated index of a State Flow store costs well under 1 ms.
//
// Scope, deliberately narrow: whatever this module does not understand is reported as
// `unsupported` with the reason, and the caller runs git's own processes instead. Unsupported:
// any required extension (split index `link`, sparse index `sdir`, …), entries with extended
// flags (intent-to-add, skip-worktree), unmerged entries, sha256 repositories, and a file whose
// trailing checksum does not match. Version 4 (prefix-compressed paths, `index.version = 4` or
// `feature.manyFiles`) is read and written back as version 4.
//
// The format is git's (Documentation/gitformat-index.txt, read-cache.c). Of the optional
// extensions only the cache tree is read and written back (git-cache-tree.ts); the others
// (untracked cache, fsmonitor, resolve-undo, end-of-index markers) are caches or hints that the
// written index drops, and git rebuilds what it needs.

import { createHash } from "node:crypto";
import { CACHE_TREE_SIGNATURE, parseCacheTree, serializeCacheTree, type CacheTreeNode } from "./git-cache-tree.ts";

const SIGNATURE = 0x44495243; // "DIRC"
const HEADER_BYTES = 12;
const SHA1_BYTES = 20;
const STAT_BYTES = 40; // ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size (uint32 each)
const FIXED_BYTES = STAT_BYTES + SHA1_BYTES + 2; // + flags
const NAME_MASK = 0x0fff;
const STAGE_MASK = 0x3000;
const EXTENDED = 0x4000;
const ASSUME_VALID = 0x8000;
const MODE_OFFSET = 24; // within the stat block

/** Regular file mode as the index stores it (S_IFREG | 0644). */
const REGULAR_FILE_MODE = 0o100644;

/** One stage-0 index entry. `path` holds the raw path bytes as a latin1 string, so `<` compares bytes as git does. */
export interface IndexEntry {
  readonly path: string;
  /** The 40-byte stat block exactly as read (all zero for entries git must re-check). */
  readonly stat: Buffer;
  readonly mode: number;
  readonly oid: string;
  readonly assumeValid: boolean;
  /** The entry's version 2 on-disk bytes when read from a version 2/3 index (copied back as they are). */
  readonly raw?: Buffer;
}

/** The on-disk versions written back: 2 (3 without extended flags is written as 2, as git does) or 4. */
export type IndexVersion = 2 | 4;

export type ParsedIndex =
  | {
      readonly supported: true;
      readonly version: IndexVersion;
      readonly entries: IndexEntry[];
      readonly cacheTree: CacheTreeNode | null;
    }
  | { readonly supported: false; readonly reason: string };

const unsupported = (reason: string): ParsedIndex => ({ supported: false, reason });

/** The latin1 (byte-preserving) form of a UTF-8 path, the representation IndexEntry.path uses. */
export function indexPathOf(path: string): string {
  return Buffer.from(path, "utf8").toString("latin1");
}

/** Parses a version 2, 3 or 4 index of a sha1 repository; anything else is `unsupported` with the reason. */
export function parseIndex(bytes: Buffer): ParsedIndex {
  if (bytes.length < HEADER_BYTES + SHA1_BYTES || bytes.readUInt32BE(0) !== SIGNATURE)
    return unsupported("not a DIRC index file");
  const version = bytes.readUInt32BE(4);
  if (version !== 2 && version !== 3 && version !== 4) return unsupported(`index version ${version}`);
  const body = bytes.subarray(0, bytes.length - SHA1_BYTES);
  const trailer = bytes.subarray(bytes.length - SHA1_BYTES);
  // index.skipHash writes a null trailer; any other trailer must be the checksum.
  if (!trailer.every((b) => b === 0) && !createHash("sha1").update(body).digest().equals(trailer))
    return unsupported("index checksum mismatch");
  const count = bytes.readUInt32BE(8);
  const entries: IndexEntry[] = [];
  let offset = HEADER_BYTES;
  let previous = ""; // version 4 names are the previous name minus a suffix, plus a new suffix
  for (let i = 0; i < count; i++) {
    if (offset + FIXED_BYTES > body.length) return unsupported("truncated index entry");
    const flags = bytes.readUInt16BE(offset + STAT_BYTES + SHA1_BYTES);
    if (flags & EXTENDED) return unsupported("entries with extended flags (intent-to-add or skip-worktree)");
    if (flags & STAGE_MASK) return unsupported("unmerged entries");
    let path: string;
    let next: number;
    if (version === 4) {
      const strip = decodeVarint(body, offset + FIXED_BYTES);
      const suffixEnd = strip === null ? -1 : bytes.indexOf(0, strip.end);
      if (strip === null || strip.value > previous.length || suffixEnd < 0 || suffixEnd >= body.length)
        return unsupported("malformed index entry name");
      path = previous.slice(0, previous.length - strip.value) + bytes.toString("latin1", strip.end, suffixEnd);
      next = suffixEnd + 1;
    } else {
      const nameStart = offset + FIXED_BYTES;
      let nameEnd = nameStart + (flags & NAME_MASK);
      if ((flags & NAME_MASK) === NAME_MASK) nameEnd = bytes.indexOf(0, nameStart); // long names are NUL-terminated
      if (nameEnd < nameStart || nameEnd >= body.length || bytes[nameEnd] !== 0)
        return unsupported("malformed index entry name");
      path = bytes.toString("latin1", nameStart, nameEnd);
      next = offset + entrySize(nameEnd - nameStart);
    }
    const stat = bytes.subarray(offset, offset + STAT_BYTES);
    entries.push({
      path,
      stat,
      mode: stat.readUInt32BE(MODE_OFFSET),
      oid: bytes.toString("hex", offset + STAT_BYTES, offset + STAT_BYTES + SHA1_BYTES),
      assumeValid: (flags & ASSUME_VALID) !== 0,
      ...(version === 4 ? {} : { raw: bytes.subarray(offset, next) }),
    });
    previous = path;
    offset = next;
  }
  let cacheTree: CacheTreeNode | null = null;
  while (offset < body.length) {
    if (offset + 8 > body.length) return unsupported("truncated index extension");
    const first = bytes[offset] ?? 0;
    const signature = bytes.toString("latin1", offset, offset + 4);
    const size = bytes.readUInt32BE(offset + 4);
    // Extensions whose signature starts with an upper-case letter are optional; others must be understood.
    if (first < 0x41 || first > 0x5a) return unsupported(`required index extension ${JSON.stringify(signature)}`);
    if (offset + 8 + size > body.length) return unsupported("truncated index extension");
    if (signature === CACHE_TREE_SIGNATURE) cacheTree = parseCacheTree(bytes.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return { supported: true, version: version === 4 ? 4 : 2, entries, cacheTree };
}

/** git's varint (varint.c): 7 bits per byte, most significant first, each continuation adding one. */
function decodeVarint(bytes: Buffer, at: number): { value: number; end: number } | null {
  let i = at;
  let c = bytes[i++];
  if (c === undefined) return null;
  let value = c & 127;
  while (c & 128) {
    c = bytes[i++];
    if (c === undefined || value > 2 ** 40) return null;
    value = (value + 1) * 128 + (c & 127);
  }
  return { value, end: i };
}

function encodeVarint(value: number): Buffer {
  const out = [value & 127];
  let rest = Math.floor(value / 128);
  while (rest > 0) {
    rest -= 1;
    out.unshift(128 | (rest & 127));
    rest = Math.floor(rest / 128);
  }
  return Buffer.from(out);
}

/** On-disk size of a v2/v3 entry: fixed part + name + 1–8 NUL bytes, padded to a multiple of 8. */
function entrySize(nameLength: number): number {
  return (FIXED_BYTES + nameLength + 8) & ~7;
}

const byPath = (a: IndexEntry, b: IndexEntry) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/**
 * The entries with the prepared outputs overlaid, in index order, as `git update-index
 * --index-info` leaves them: a blob id stages `path` as a regular file with an all-zero stat block
 * (git re-checks it), null removes it.
 */
export function overlayEntries(
  entries: readonly IndexEntry[],
  overlay: ReadonlyMap<string, string | null>,
): IndexEntry[] {
  const byName = new Map(entries.map((entry) => [entry.path, entry]));
  for (const [path, oid] of overlay) {
    const key = indexPathOf(path);
    if (oid === null) byName.delete(key);
    else
      byName.set(key, { path: key, stat: Buffer.alloc(STAT_BYTES), mode: REGULAR_FILE_MODE, oid, assumeValid: false });
  }
  return [...byName.values()].sort(byPath);
}

/**
 * Serializes stage-0 entries (in index order) as a version 2 or 4 index, with the cache tree as
 * its only extension when given, and the checksum. Entries read from a version 2/3 index are
 * copied back byte for byte.
 */
export function serializeIndex(
  entries: readonly IndexEntry[],
  version: IndexVersion = 2,
  cacheTree: CacheTreeNode | null = null,
): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32BE(SIGNATURE, 0);
  header.writeUInt32BE(version, 4);
  header.writeUInt32BE(entries.length, 8);
  const parts: Buffer[] = [header];
  let previous = Buffer.alloc(0);
  for (const entry of entries) {
    if (version === 2 && entry.raw) {
      parts.push(entry.raw);
      continue;
    }
    const name = Buffer.from(entry.path, "latin1");
    const fixed = Buffer.alloc(FIXED_BYTES);
    entry.stat.copy(fixed, 0, 0, STAT_BYTES);
    fixed.writeUInt32BE(entry.mode, MODE_OFFSET); // the stat block of an overlaid entry is zero but its mode is not
    fixed.write(entry.oid, STAT_BYTES, SHA1_BYTES, "hex");
    fixed.writeUInt16BE(
      (entry.assumeValid ? ASSUME_VALID : 0) | Math.min(name.length, NAME_MASK),
      STAT_BYTES + SHA1_BYTES,
    );
    parts.push(fixed);
    if (version === 4) {
      let common = 0;
      while (common < previous.length && common < name.length && name[common] === previous[common]) common++;
      parts.push(encodeVarint(previous.length - common), name.subarray(common), Buffer.alloc(1));
      previous = name;
    } else {
      parts.push(name, Buffer.alloc(entrySize(name.length) - FIXED_BYTES - name.length)); // 1–8 NUL bytes of padding
    }
  }
  if (cacheTree) {
    const data = serializeCacheTree(cacheTree);
    const extension = Buffer.alloc(8);
    extension.write(CACHE_TREE_SIGNATURE, 0, "latin1");
    extension.writeUInt32BE(data.length, 4);
    parts.push(extension, data);
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash("sha1").update(body).digest()]);
}
