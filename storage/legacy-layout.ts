// The untagged pre-0.4 development layout (spec 001 "Existing stores and migration": "The untagged
// pre-0.4 development layout that appended SHA-256 suffixes remains readable at its historical Git
// revisions; if the selected layout is current HEAD, startup adopts its CWD/session files into
// Pi-native paths with compare-and-swap publication, rollback, and an immediate replacement
// revision pointer"). Before 0.4 the cwd and session directories carried a SHA-256 digest after
// Pi's names; 0.4 keys them by Pi's names alone and proves ownership inside meta.json instead
// (001 "Temporal storage": "without hiding another digest in the path").
//
// Assumed, since neither 001 nor this repository's history spells the suffix out: lowercase hex,
// 8–64 digits (a whole digest or a prefix of one), appended to the Pi-native key directly or after
// one "-", "_" or "."; the files inside are the current formats, only their directories differ.
// The suffix is never recomputed (what it hashed is not recorded either): a directory is this
// session's when the runtime meta.json inside it names this session's UUID and cwd.
//
// Only the cwd and session directories move; the global scope lives at the root in both layouts.
// Git-only: the layout is read from Git revisions and adopted by a Git publication.

import { resolve } from "node:path";
import {
  CHECKPOINT_FILE,
  CONFIG_FILE,
  META_FILE,
  PATCHES_FILE,
  parseRuntimeMeta,
  parseScopeMeta,
} from "./core/codec.ts";
import { errorMessage } from "./core/errors.ts";
import type { CohortSnapshot, PublishReceipt, StoreBackend, StorePointer } from "./backend.ts";
import { hashFiles, sameBytes } from "./cohort-basis.ts";
import type { GitBackend } from "./git/git-backend.ts";
import { readRevisionFiles } from "./git/git-revision.ts";
import { GitCommandError, gitFailed } from "./git/git-runner.ts";
import { cohortPaths, scopeFiles, type ScopeKeys } from "./layout.ts";
import { StoreError } from "./store-error.ts";

/** Whose directories to look for: the session's keys, its UUID and its canonical cwd. */
export interface LayoutOwner extends ScopeKeys {
  readonly cwd: string;
  readonly sessionId: string;
}

/** Where one revision keeps this session's cwd and session files in the pre-0.4 layout. */
export interface SuffixedLayout {
  readonly revision: string;
  /** The suffixed cwd directory (store-relative). */
  readonly cwdDir: string;
  /** The session directory inside it (store-relative; its own name suffixed, or Pi's). */
  readonly sessionDir: string;
}

const SUFFIX = /^[-_.]?[0-9a-f]{8,64}$/;

/** Whether a directory name is `key` with a pre-0.4 digest suffix appended. */
export function isSuffixed(name: string, key: string): boolean {
  return name.length > key.length && name.startsWith(key) && SUFFIX.test(name.slice(key.length));
}

/** The subdirectories of `dir` ("" for the root) at `revision`, store-relative. */
async function subdirectories(git: GitBackend, revision: string, dir: string): Promise<string[]> {
  let listing: string;
  try {
    const where = dir === "" ? [] : ["--", `${dir}/`];
    listing = await git.runner.execText(["ls-tree", "-z", "--full-tree", `${revision}^{commit}`, ...where]);
  } catch (error) {
    if (
      error instanceof GitCommandError &&
      /not a valid object|not a tree object|bad object|invalid object/i.test(error.stderr)
    ) {
      throw new StoreError("revision-missing", `Revision ${revision} is not a commit in the state repository.`, {
        cause: error,
      });
    }
    throw gitFailed(`Listing ${dir || "the root"} at revision ${revision}`, error);
  }
  return listing
    .split("\0")
    .filter((record) => record.includes("\t") && record.split("\t")[0]!.split(" ")[1] === "tree")
    .map((record) => record.slice(record.indexOf("\t") + 1));
}

const base = (path: string) => path.slice(path.lastIndexOf("/") + 1);

/** Whether a candidate's metas (read at the revision) prove it is this session's. */
function owns(owner: LayoutOwner, sessionMeta: Buffer | null, cwdMeta: Buffer | null): boolean {
  if (sessionMeta === null) return false;
  try {
    const identity = parseRuntimeMeta(sessionMeta).identity;
    if (identity.sessionId !== owner.sessionId || resolve(identity.cwd) !== resolve(owner.cwd)) return false;
    const cwd = cwdMeta === null ? undefined : parseScopeMeta(cwdMeta).identity?.cwd;
    return cwd === undefined || resolve(cwd) === resolve(owner.cwd);
  } catch {
    return false; // a meta.json that does not parse proves nothing
  }
}

/**
 * This session's directories in the pre-0.4 layout at `revision`; null when it has none there.
 * Two suffixed directory pairs that both name this session are refused by name.
 */
export async function findSuffixedLayout(
  git: GitBackend,
  owner: LayoutOwner,
  revision: string,
): Promise<SuffixedLayout | null> {
  const cwdDirs = (await subdirectories(git, revision, "")).filter((name) => isSuffixed(name, owner.cwdKey));
  const candidates: { cwdDir: string; sessionDir: string }[] = [];
  for (const cwdDir of cwdDirs) {
    for (const sessionDir of await subdirectories(git, revision, cwdDir)) {
      const name = base(sessionDir);
      if (name === owner.sessionKey || isSuffixed(name, owner.sessionKey)) candidates.push({ cwdDir, sessionDir });
    }
  }
  if (candidates.length === 0) return null;
  const metas = [...new Set(candidates.flatMap((c) => [`${c.sessionDir}/${META_FILE}`, `${c.cwdDir}/${META_FILE}`]))];
  const files = await readRevisionFiles(git.runner, git.root, revision, metas);
  const read = (path: string) => files.get(path) ?? null;
  const owned = candidates.filter((c) =>
    owns(owner, read(`${c.sessionDir}/${META_FILE}`), read(`${c.cwdDir}/${META_FILE}`)),
  );
  if (owned.length > 1) {
    throw new StoreError(
      "ambiguous-snapshot",
      `Revision ${revision.slice(0, 12)} holds this session in more than one pre-0.4 directory ` +
        `(${owned.map((c) => c.sessionDir).join(", ")}): nothing proves which one is its state. Nothing was ` +
        "restored; move the directories that are not this session's out of the store (and commit that), then " +
        "reopen the session.",
      { file: owned[0]!.sessionDir },
    );
  }
  return owned[0] ? { revision, ...owned[0] } : null;
}

/** Each cwd and session file of the layout: [pre-0.4 path, Pi-native path]. */
export function layoutMoves(layout: SuffixedLayout, keys: ScopeKeys): [string, string][] {
  const cwd = scopeFiles("cwd", keys);
  const session = scopeFiles("session", keys);
  return [
    [`${layout.cwdDir}/${CHECKPOINT_FILE}`, cwd.checkpoint],
    [`${layout.cwdDir}/${PATCHES_FILE}`, cwd.patches],
    [`${layout.cwdDir}/${META_FILE}`, cwd.meta],
    [`${layout.sessionDir}/${CHECKPOINT_FILE}`, session.checkpoint],
    [`${layout.sessionDir}/${PATCHES_FILE}`, session.patches],
    [`${layout.sessionDir}/${META_FILE}`, session.meta],
    [`${layout.sessionDir}/${CONFIG_FILE}`, session.config!],
  ];
}

/**
 * The session's cohort at the layout's revision, keyed by the Pi-native paths it is read as (the
 * global scope from the root as always): what a restore decodes, without moving anything.
 */
export async function readSuffixedRevision(
  git: GitBackend,
  layout: SuffixedLayout,
  keys: ScopeKeys,
): Promise<CohortSnapshot> {
  const from = new Map(layoutMoves(layout, keys).map(([old, native]) => [native, old]));
  const members = cohortPaths(keys);
  const read = await readRevisionFiles(
    git.runner,
    git.root,
    layout.revision,
    members.map((path) => from.get(path) ?? path),
  );
  const files = new Map(members.map((path) => [path, read.get(from.get(path) ?? path) ?? null]));
  return { pointer: { revision: layout.revision }, files, hashes: hashFiles(files) };
}

/**
 * Moves the layout's files (as the live store holds them, checked against HEAD) to the Pi-native
 * paths in one compare-and-swap publication: exact bytes, so semantic state, lineage, step and hot
 * history are unchanged. A Pi-native file that already exists beside its pre-0.4 counterpart is a
 * named refusal, before anything is written. After publication the files are read back and
 * `verify` (e.g. decoding the new revision) runs; a failure puts the old layout back exactly,
 * unless the published files changed meanwhile. null: nothing left to move.
 */
export async function adoptSuffixedLayout(
  store: StoreBackend,
  layout: SuffixedLayout,
  keys: ScopeKeys,
  verify: (pointer: StorePointer) => Promise<void> = async () => undefined,
): Promise<PublishReceipt | null> {
  const moves = layoutMoves(layout, keys);
  const members = moves.flat();
  const live = await store.loadCurrent(members);
  const writes = new Map<string, Buffer | null>();
  for (const [old, native] of moves) {
    const bytes = live.files.get(old) ?? null;
    if (bytes === null) continue;
    if (live.files.get(native)) {
      throw new StoreError(
        "ambiguous-snapshot",
        `${old} (the pre-0.4 layout) and ${native} (the Pi-native layout) both exist: two copies, and nothing ` +
          `proves which one is current. Nothing was adopted. Compare them, keep the current one, remove the other ` +
          `and commit that (git -C ${store.root} rm -- <file> && git -C ${store.root} commit -m "keep one layout"), ` +
          "then reopen the session.",
        { file: old },
      );
    }
    writes.set(native, bytes);
    writes.set(old, null);
  }
  if (writes.size === 0) return null;
  const receipt = await store.publish({
    basis: live,
    writes,
    message: `state-flow: adopt the pre-0.4 layout of ${layout.sessionDir} into Pi-native paths`,
  });
  try {
    const after = await store.loadCurrent(members);
    for (const [path, bytes] of writes) {
      if (!sameBytes(after.files.get(path) ?? null, bytes)) {
        throw new StoreError("migration-failed", `${path} does not hold what the adoption wrote`, { file: path });
      }
    }
    await verify(receipt.pointer);
  } catch (error) {
    return rollBack(store, members, live, writes, receipt.pointer.revision, error);
  }
  return receipt;
}

/** Puts the pre-0.4 files back and removes the Pi-native copies, only if the published bytes are still there. */
async function rollBack(
  store: StoreBackend,
  members: readonly string[],
  before: CohortSnapshot,
  writes: ReadonlyMap<string, Buffer | null>,
  revision: string,
  cause: unknown,
): Promise<never> {
  const what = `The adoption of the pre-0.4 layout failed (${errorMessage(cause)})`;
  let after: CohortSnapshot;
  try {
    after = await store.loadCurrent(members);
  } catch (error) {
    throw new StoreError(
      "migration-failed",
      `${what}, and the store could not be read back (${errorMessage(error)}), so nothing was restored over it ` +
        `(revision ${revision} is as published). Resolve the read error, keep one layout, then reopen the session.`,
      { cause: error },
    );
  }
  const changed = [...writes].filter(([path, bytes]) => !sameBytes(after.files.get(path) ?? null, bytes));
  if (changed.length > 0) {
    throw new StoreError(
      "migration-failed",
      `${what}, and ${changed.map(([p]) => p).join(", ")} changed since it was published, so nothing was ` +
        `restored over them (revision ${revision} is as published). Keep one layout, then reopen the session.`,
      { file: changed[0]![0], cause },
    );
  }
  const undo = new Map([...writes.keys()].map((path) => [path, before.files.get(path) ?? null]));
  try {
    await store.publish({ basis: after, writes: undo, message: "state-flow: restore the pre-0.4 layout" });
  } catch (error) {
    throw new StoreError(
      "migration-failed",
      `${what}, and restoring the old layout failed too (${errorMessage(error)}). The store holds the adoption ` +
        `as published (${revision}); inspect ${[...writes.keys()].join(", ")} before reopening the session.`,
      { cause: error },
    );
  }
  throw new StoreError(
    "migration-failed",
    `${what}. The pre-0.4 layout was restored exactly and nothing else changed; fix the cause and reopen the session.`,
    { cause },
  );
}
