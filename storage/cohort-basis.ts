// What both durable backends share about a cohort: its `file:` pointer (what a file-only Pi
// checkpoint proves), request validation, the per-file compare-and-swap against a basis, the
// stale-basis error and the journal entries and write order of one publication. Backends import
// this module, never each other.

import { assertStorePath, sha256Hex } from "./fs/fs-safe.ts";
import { JOURNAL_FILE_NAME, type JournalEntry } from "./fs/journal.ts";
import { LOCK_FILE_NAME } from "./fs/lock.ts";
import { comparePaths, scopeOfPath } from "./layout.ts";
import { StoreError } from "./store-error.ts";
import type { CohortBasis, CohortSnapshot, PublishRequest, StorePointer } from "./backend.ts";

const FILE_POINTER_PREFIX = "file:";
/**
 * A pointer names the branch-owned part of the cohort: the session scope's files (its stream and
 * the branch's runtime config/meta). Global and cwd files are shared with other sessions, which
 * legitimately advance them; holding them against the pointer would make every other session's
 * shared patch unprove this branch. They are read live and validated by their own streams.
 */
const LISTING_HEADER = "state-flow file cohort v2 (session scope)\n";
/** Pointers recorded before v2 name every member; they resolve while the whole cohort is unchanged. */
const LEGACY_LISTING_HEADER = "state-flow file cohort v1\n";

/** Name of the file-only publication lock in the store root. */
export const FILE_LOCK_NAME = `.${LOCK_FILE_NAME}`;
/** Name of the file-only publication journal in the store root. */
export const FILE_JOURNAL_NAME = `.${JOURNAL_FILE_NAME}`;

export function isFilePointer(pointer: StorePointer | null | undefined): boolean {
  return pointer != null && /^file:[0-9a-f]{64}$/.test(pointer.revision);
}

/**
 * Canonical listing: the header, then one `<sha256 or -> <path>` line per included member ("-" when
 * absent), sorted by path bytes. Every member path is checked, included or not.
 */
function listingPointer(
  header: string,
  hashes: ReadonlyMap<string, string | null>,
  include: (path: string) => boolean,
): StorePointer {
  const paths = [...hashes.keys()].sort(comparePaths);
  let listing = header;
  for (const path of paths) {
    assertStorePath(path);
    if (include(path)) listing += `${hashes.get(path) ?? "-"} ${path}\n`;
  }
  return { revision: `${FILE_POINTER_PREFIX}${sha256Hex(listing)}` };
}

/** The `file:` pointer of a cohort (v2): its session-scope members' listing. */
export function filePointerOf(hashes: ReadonlyMap<string, string | null>): StorePointer {
  return listingPointer(LISTING_HEADER, hashes, (path) => scopeOfPath(path) === "session");
}

/** The pointer an older State Flow recorded for a cohort (v1): every member's listing. */
export function legacyFilePointerOf(hashes: ReadonlyMap<string, string | null>): StorePointer {
  return listingPointer(LEGACY_LISTING_HEADER, hashes, () => true);
}

/** Whether `pointer` names this cohort: its session-scope files (v2) or, for an older pointer, all of it (v1). */
export function provesFileCohort(pointer: StorePointer, hashes: ReadonlyMap<string, string | null>): boolean {
  if (!isFilePointer(pointer)) return false;
  return (
    filePointerOf(hashes).revision === pointer.revision || legacyFilePointerOf(hashes).revision === pointer.revision
  );
}

export function hashFiles(files: ReadonlyMap<string, Uint8Array | null>): Map<string, string | null> {
  const hashes = new Map<string, string | null>();
  for (const [path, bytes] of files) hashes.set(path, bytes === null ? null : sha256Hex(bytes));
  return hashes;
}

/** Whether two members hold the same bytes (null = absent). */
export function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  return a === b || (a !== null && b !== null && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b));
}

/** Whether two reads of a cohort hold the same members with the same bytes. */
export function sameFiles(
  a: ReadonlyMap<string, Uint8Array | null>,
  b: ReadonlyMap<string, Uint8Array | null>,
): boolean {
  return a.size === b.size && [...a].every(([path, bytes]) => b.has(path) && sameBytes(bytes, b.get(path) ?? null));
}

/** Whether two bases name the same members with the same hashes. */
export function sameHashes(a: ReadonlyMap<string, string | null>, b: ReadonlyMap<string, string | null>): boolean {
  return a.size === b.size && [...a].every(([path, hash]) => b.has(path) && b.get(path) === hash);
}

function short(hash: string | null | undefined): string {
  return hash ? `sha256 ${hash.slice(0, 12)}…` : "absent";
}

function staleBasisError(
  path: string,
  expected: string | null | undefined,
  found: string | null,
  detail = "",
): StoreError {
  const scope = scopeOfPath(path);
  return new StoreError(
    "stale-basis",
    `Stale basis: the ${scope ?? "store"} scope file ${path} moved since the cohort basis was read ` +
      `(expected ${short(expected)}, found ${short(found)})${detail}. Another publisher advanced it. ` +
      `Nothing was written; reload the current view, restage the cohort on it and retry.`,
    { file: path },
  );
}

/**
 * A file-only pointer resolves only while the session files it names are still the current ones
 * (file-only stores keep no history); the shared files are then whatever they are now. Shared by
 * both backends: after a store was adopted into Git, a branch's `file:` pointer keeps resolving
 * against the live files the same way; the snapshot then carries the Git revision when HEAD holds
 * these files, otherwise the pointer as recorded (so a successor's meta names what the branch
 * recorded).
 */
export function loadIfCurrent(pointer: StorePointer, current: CohortSnapshot): CohortSnapshot {
  if (!provesFileCohort(pointer, current.hashes)) {
    throw new StoreError(
      "pointer-unavailable",
      `The file cohort ${pointer.revision} is no longer available: this session's files no longer hold what it ` +
        `names (they now form ${filePointerOf(current.hashes).revision}; a pointer an older State Flow recorded ` +
        `names the shared global and cwd files too). File-only stores keep no history, ` +
        `and the current files are never passed off as the selected past. Keep the selected pointer, choose a ` +
        `newer checkpoint of this branch (its newest one names the current session files), or use Git for ` +
        `cold history.`,
    );
  }
  const pointed = current.pointer !== null && !isFilePointer(current.pointer) ? current.pointer : pointer;
  return { ...current, pointer: { revision: pointed.revision } };
}

/** Validates a publish request against its basis: writes must be cohort members. */
export function validateRequest(request: PublishRequest): string[] {
  const members = [...request.basis.hashes.keys()];
  if (members.length === 0)
    throw new StoreError(
      "invalid-request",
      "A publish request needs a basis naming the complete cohort (load the current view first).",
    );
  for (const path of members) assertStorePath(path);
  for (const path of request.writes.keys()) {
    if (!request.basis.hashes.has(path)) {
      throw new StoreError(
        "invalid-request",
        `${path} is written but is not a member of the cohort basis; publish only files of the loaded cohort.`,
        { file: path },
      );
    }
  }
  return members.sort(comparePaths);
}

/** What a publication journal records for the members it replaces (`temps` in `puts` order) and deletes. */
export function journalEntries(
  puts: ReadonlyArray<readonly [string, Uint8Array]>,
  temps: readonly string[],
  deletions: readonly string[],
  basis: ReadonlyMap<string, string | null>,
): JournalEntry[] {
  return [
    ...puts.map(([path, bytes], i) => ({
      path,
      temp: temps[i]!,
      before: basis.get(path) ?? null,
      after: sha256Hex(bytes),
    })),
    ...deletions.map((path) => ({ path, temp: null, before: basis.get(path) ?? null, after: null })),
  ];
}

/** The members a publication writes (in write order) and the ones it deletes. */
export function splitWrites(writes: ReadonlyMap<string, Buffer | null>): {
  puts: [string, Buffer][];
  deletions: string[];
} {
  const order = writeOrder(writes.keys());
  return {
    puts: order.flatMap((path) => {
      const bytes = writes.get(path) ?? null;
      return bytes === null ? [] : [[path, bytes] as [string, Buffer]];
    }),
    deletions: order.filter((path) => writes.get(path) == null),
  };
}

/** Order of writes: data files first, then config.json, then meta.json (session last within each group). */
function writeOrder(paths: Iterable<string>): string[] {
  const rank = (p: string) =>
    p.endsWith("/meta.json") || p === "meta.json" ? 2 : p.endsWith("/config.json") || p === "config.json" ? 1 : 0;
  return [...paths].sort(
    (a, b) => rank(a) - rank(b) || a.split("/").length - b.split("/").length || comparePaths(a, b),
  );
}

/** Per-file compare-and-swap of every cohort member against the basis. */
export function verifyBasis(basis: CohortBasis, currentHashes: ReadonlyMap<string, string | null>): void {
  for (const [path, found] of currentHashes) {
    const expected = basis.hashes.get(path);
    if (expected !== found) throw staleBasisError(path, expected, found);
  }
}
