// The publication protocol of a Git store: one local commit per accepted cohort, the live files,
// the index and the branch moved together, so that a process killed at any point leaves either
// nothing published or a commit the next holder of the lock finishes. Kept apart from the commit
// itself (git-commit.ts) and from reads (git-reads.ts): this module owns the locks, the journal,
// the staging and what a failure undoes.
//
// Publication (under the common-Git-directory publication lock); one git process, started from a
// helper shell (see shell-spawner.ts), with the in-process work overlapped with it:
//   1. in parallel, all invisible until the ref moves:
//      - per-file compare-and-swap reads of every cohort member against the caller's basis; the
//        reconciled base is the current branch head read from the ref files (0 processes);
//      - an ISOLATED index (GIT_INDEX_FILE = temp copy of the caller's index, which tracks HEAD):
//        `git add -A -v` stages the complete non-ignored worktree delta         (1 process)
//      - the exact prepared bytes are written as loose blob objects in-process   (0 processes)
//      - the live files' same-directory temp copies are written and fsynced (their names match
//        STORE_TEMP_GLOB, which `git add -A` excludes)                           (0 processes)
//   2. store files `git add` restaged (attributes run them through filters and eol conversion,
//      a chmod changes their mode) are staged again from their exact bytes; the staged index is
//      parsed in-process, those and the prepared blobs overlaid exactly as `update-index
//      --index-info` would, the tree objects written and the isolated index rewritten
//      (git-index.ts, git-tree.ts)                                               (0 processes)
//   3. the commit object is written in-process, byte-identical to `git commit-tree -p <base>`
//      (identity from git's own `git var`, cached per backend; see git-objects.ts) (0 processes)
//   4. git's index.lock is taken (O_EXCL, stamped with pid, host and a token) and held until the
//      new index is installed: no git command can stage or commit from the old index or the old
//      live files while the ref already names the new commit. A user's entries staged since the
//      copy are merged into the isolated index under that lock. Held by someone else, nothing is
//      published (`index-locked`). Then the publication journal (journal.ts) records the temp
//      copies, the base, the new commit and the lock; then the ref moves by compare-and-swap
//      against the reconciled base through git's lockfile protocol (see git-refs.ts; a failure
//      before this point publishes nothing)                                      (0 processes)
//   5. the temp copies are renamed into place (then one fsync per directory), the isolated
//      index is renamed over index.lock and into place, so no artificial staged/unstaged entries
//      remain, and the journal is removed (0 processes).
// A process killed after the ref moved leaves the journal: the next holder of the lock renames
// the remaining temp copies and installs the index (the commit is accepted); killed before, the
// journal's temp copies and git's ref and index locks it took are discarded (nothing was
// published). What a killed publication left without a journal (isolated index copies, temp
// copies, a stamped index.lock) is removed by the next publication once its owner is gone.
// Step 2 reuses the index's cache tree for the trees of the commit this backend published last
// (so only the touched paths are rehashed). Where it would not be exact (a split or sparse index,
// intent-to-add or skip-worktree entries, sha256 objects, core.sharedRepository), or for a
// large store's first publication in this process (or after another writer moved HEAD), it runs
// as `git update-index -z --index-info` + `git write-tree` (two processes more). Where steps 3–4 would not be exact
// (sha256 objects, commit.gpgSign, a non-UTF-8 i18n.commitEncoding, core.sharedRepository,
// extensions.refStorage, a reference-transaction hook, a timezone node and git disagree on, an
// unusual message or ref name) they run as `git commit-tree` + `git update-ref` (two more).
// A failure after the ref moved keeps the publication lock; removing it lets the next
// publication finish the cohort from the journal.

import { createHash } from "node:crypto";
import { lstatSync, readFileSync, writeFileSync, type BigIntStats } from "node:fs";
import { unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  FILE_JOURNAL_NAME,
  FILE_LOCK_NAME,
  hashFiles,
  isFilePointer,
  journalEntries,
  provesFileCohort,
  sameBytes,
  splitWrites,
  validateRequest,
  verifyBasis,
} from "../cohort-basis.ts";
import { killPoint } from "../fs/crash-points.ts";
import {
  STORE_TEMP_GLOB,
  prepareOwnedFilesAtomic,
  readOwnedFile,
  removeOwnedFile,
  sha256Hex,
  type PreparedWrites,
} from "../fs/fs-safe.ts";
import { removeJournal, writeJournal } from "../fs/journal.ts";
import { acquirePublicationLock } from "../fs/lock.ts";
import { comparePaths } from "../layout.ts";
import { StoreError, errnoOf, isStoreError } from "../store-error.ts";
import type { PublishReceipt, PublishRequest } from "../backend.ts";
import type { GitCommitter } from "./git-commit.ts";
import { changedMembers, readMembers } from "./git-reads.ts";
import { explainLockHeld, finishInterruptedPublication } from "./git-recovery.ts";
import { assertGitPath, backdateIndex, gitBlobId, isGitPointer, type GitRepo } from "./git-repo.ts";
import { gitFailed } from "./git-runner.ts";
import type { CommitSettings } from "./git-settings.ts";
import { createIndexLock, indexLockStamp, installIndex, isolatedIndexPath, releaseIndexLock } from "./index-lock.ts";
import { EMPTY_INDEX, mergeIndexEntries, sameEntries, storeFilesAdded } from "./index-merge.ts";
import { removeLeftovers } from "./leftovers.ts";
import { parseIndex, serializeIndex } from "./plumbing/git-index.ts";
import { writeLooseObject, writeSmallLooseObjectSync } from "./plumbing/git-objects.ts";
import { ensureStoreAttributes } from "./store-attributes.ts";

/** Blobs up to this size are deflated and written with synchronous calls (a 128 KiB state's checkpoint is one). */
const SYNC_BLOB_BYTES = 256 * 1024;

/** What a failing publication has to undo, and whether it may (see GitPublisher.abandonPublication). */
interface PublicationAttempt {
  /** The isolated index the worktree delta is staged into (GIT_INDEX_FILE). */
  readonly index: string;
  /** The caller's index the isolated one was copied from (null: none, it started from the base tree). */
  seed?: Buffer | null;
  /** The content of git's index.lock while this publication holds it. */
  indexLock?: string;
  /** The live files' temp copies, once their preparation started. */
  prepared?: Promise<PreparedWrites>;
  /** A journal may exist: a failure before the ref moved must remove it. */
  journaled: boolean;
  /** The ref moved: the lock and the journal stay for the next publication to finish from. */
  keepLock: boolean;
}

export class GitPublisher {
  private readonly repo: GitRepo;
  private readonly committer: GitCommitter;
  /** The store attributes in info/attributes were checked (once per backend, under the lock). */
  private attributesChecked = false;

  constructor(repo: GitRepo, committer: GitCommitter) {
    this.repo = repo;
    this.committer = committer;
  }

  async publish(request: PublishRequest): Promise<PublishReceipt> {
    const members = validateRequest(request);
    for (const path of members) assertGitPath(path);
    assertPublishableBasis(request.basis);
    const settings = await this.repo.commitSettings(); // identity first: nothing is written without one
    // A basis HEAD has already left is refused before the lock (and checked again under it).
    if (request.basisUnread || request.parents) this.assertBasisIsHead(request, await this.repo.head());
    const lock = await acquirePublicationLock(this.repo.lockPath, {
      generation: this.repo.generation,
      purpose: "git publication",
    }).catch(async (error: unknown) => {
      throw await explainLockHeld(this.repo, error);
    });
    const attempt: PublicationAttempt = {
      index: isolatedIndexPath(this.repo.info.gitDir),
      journaled: false,
      keepLock: false,
    };
    try {
      return await this.publishLocked(request, members, settings, attempt);
    } catch (error) {
      throw await this.abandonPublication(error, attempt);
    } finally {
      if (!attempt.keepLock) await lock.release();
    }
  }

  /** A basis not read live holds only while HEAD is its revision: a live read checks files against a moved HEAD. */
  private assertBasisIsHead(
    request: PublishRequest,
    { ref, revision }: { ref: string; revision: string | null },
  ): void {
    if (revision !== null && request.basis.pointer?.revision === revision) return;
    throw new StoreError(
      "stale-basis",
      `Stale basis: ${ref} of the state repository is ${revision ?? "unborn"}, not the basis revision ` +
        `${request.basis.pointer?.revision ?? "(none)"} the cohort was staged on. Nothing was written; ` +
        `reload the current view, restage the cohort on it and retry.`,
      { file: ref },
    );
  }

  /** The publication under the lock; `attempt` records what a failure has to undo. */
  private async publishLocked(
    request: PublishRequest,
    members: readonly string[],
    settings: CommitSettings,
    attempt: PublicationAttempt,
  ): Promise<PublishReceipt> {
    await finishInterruptedPublication(this.repo);
    removeLeftovers(
      { root: this.repo.root, gitDir: this.repo.info.gitDir, commonDir: this.repo.info.commonDir },
      members.map((path) => dirname(path)),
    );
    if (!this.attributesChecked) {
      await ensureStoreAttributes(this.repo.info.commonDir).catch((error: unknown) => {
        throw gitFailed(`Writing ${join(this.repo.info.commonDir, "info", "attributes")}`, error);
      });
      this.attributesChecked = true;
    }
    const { ref, revision: head } = await this.repo.head();
    if (request.basisUnread || request.parents) this.assertBasisIsHead(request, { ref, revision: head });
    // Independent work in parallel (all of it invisible until the ref moves): the per-file
    // compare-and-swap reads, staging the worktree delta into the isolated index, writing the
    // prepared blobs into the object database, and writing + fsyncing the live files'
    // same-directory temp copies (renamed into place only after the ref moved; `git add -A`
    // excludes them by name). A failure to prepare them publishes nothing.
    const { puts, deletions } = splitWrites(request.writes);
    const prepared = prepareOwnedFilesAtomic(this.repo.root, puts);
    attempt.prepared = prepared;
    prepared.catch(() => undefined); // awaited below; never an unhandled rejection
    const settled = await this.settlePreparation(request, members, settings, attempt, { ref, head });
    const { current, currentHashes, blobs, restaged } = settled;
    // The reconciled base: every member is unchanged, so a head that moved through other scopes' commits is adopted.
    const changed = changedMembers(members, request.writes, current, currentHashes);
    // (A `file:` basis is never shortcut: HEAD does not hold that cohort, the commit adopts it.)
    if (changed.length === 0 && head !== null && !isFilePointer(request.basis.pointer) && !request.parents) {
      await unlink(attempt.index).catch(() => undefined);
      await prepared.then(
        (p) => p.abort(),
        () => undefined,
      );
      return { pointer: { revision: head }, hashes: currentHashes, changed, committed: false };
    }
    const revision = await this.committer.commitStaged({
      ref,
      base: head,
      env: { GIT_INDEX_FILE: attempt.index },
      blobs,
      restaged,
      message: request.message ?? "state-flow: accepted cohort",
      ...(request.parents ? { parents: request.parents } : {}),
      ...(request.reuse ? { reuse: request.reuse } : {}),
      beforeRefUpdate: async (revision) => {
        const temps = (await prepared).temps;
        const indexBasis = await this.holdIndexLock(attempt);
        attempt.journaled = true; // from here on a journal may exist: a failure must remove it
        await writeJournal(this.repo.journalPath, {
          version: 1,
          pid: process.pid,
          generation: this.repo.generation,
          entries: journalEntries(puts, temps, deletions, currentHashes),
          git: { ref, base: head, revision, index: attempt.index, indexLock: attempt.indexLock!, indexBasis },
        });
      },
    });
    attempt.keepLock = true; // from here on the ref moved: a failure leaves the lock (and the journal) for recovery
    const headNow = await this.installPublication(prepared, deletions, attempt, ref);
    attempt.keepLock = false;
    if (headNow !== revision) throw this.refMovedError(ref, revision, headNow);
    const hashes = new Map(currentHashes);
    for (const [path, bytes] of request.writes) hashes.set(path, bytes === null ? null : sha256Hex(bytes));
    // Every member is committed with its exact live bytes (restaged when git add filtered them).
    const committedBlobs = new Map<string, string | null>();
    for (const path of members) {
      const bytes = request.writes.has(path) ? request.writes.get(path)! : (current.get(path) ?? null);
      committedBlobs.set(path, bytes === null ? null : gitBlobId(bytes, this.repo.info.objectFormat));
    }
    this.repo.knownBlobs.committed(revision, committedBlobs);
    // The index.lock protocol above either merged the caller's index or refused: it is always in step.
    return { pointer: { revision }, hashes, changed, committed: true, indexSynced: true };
  }

  /**
   * A writer that ignores git's index.lock (plumbing such as `git update-ref`, or the lock removed
   * by hand) moved the branch after this commit: the cohort is installed in the live files and
   * the index but the branch no longer names it. Nothing is undone; the caller decides.
   */
  private refMovedError(ref: string, revision: string, head: string | null): StoreError {
    const git = `git -C ${this.repo.root}`;
    return new StoreError(
      "ref-moved",
      `The cohort was committed as ${revision} and its live files and index were installed, but ${ref} of the ` +
        `state repository now points to ${head ?? "nothing"}: a git command that ignores git's index.lock (which ` +
        `State Flow held), such as git update-ref, moved it meanwhile. Nothing was lost: ${revision} stays in the ` +
        `reflog (${git} log -g -3) and the index holds it. Compare with ${git} diff ${head ?? revision} ${revision} ` +
        `--stat, then either keep the cohort on top of the moved branch by committing the index ` +
        `(${git} commit -m "state-flow: accepted cohort") or drop it (${git} restore --source=${head ?? "HEAD"} ` +
        `--staged --worktree -- .), and retry.`,
      { file: ref },
    );
  }

  /**
   * Runs the compare-and-swap reads, the staging and the blob writes alongside the temp copies
   * already being prepared, then checks the basis: a failed read or a stale basis takes
   * precedence over a failed staging or blob write. Store files the staging restaged are then
   * written again from their exact bytes.
   */
  private async settlePreparation(
    request: PublishRequest,
    members: readonly string[],
    settings: CommitSettings,
    attempt: PublicationAttempt,
    { ref, head }: { ref: string; head: string | null },
  ): Promise<{
    current: Map<string, Buffer | null>;
    currentHashes: Map<string, string | null>;
    blobs: Map<string, string | null>;
    restaged: Map<string, string | null>;
  }> {
    // The staging's git process starts first; the members are read while it runs.
    const staging = this.stageWorktree(attempt, head);
    const blobs = this.writeBlobs(request.writes, settings);
    const [stagedResult, blobsResult, currentResult] = await Promise.allSettled([
      staging,
      blobs,
      readMembers(this.repo.root, members),
    ]);
    if (currentResult.status === "rejected") throw currentResult.reason;
    const current = currentResult.value;
    const currentHashes = hashFiles(current);
    verifyBasis(request.basis, currentHashes);
    const basisPointer = request.basis.pointer;
    if (basisPointer !== null && isGitPointer(basisPointer) && head === null) {
      throw new StoreError(
        "stale-basis",
        `Stale basis: ${ref} of the state repository no longer exists although the basis names ` +
          `${basisPointer.revision}. Nothing was written; reconcile the repository history and retry.`,
        { file: ref },
      );
    }
    if (stagedResult.status === "rejected") throw stagedResult.reason;
    if (blobsResult.status === "rejected") throw blobsResult.reason;
    const restaged = await this.restageStoreFiles(stagedResult.value, request.writes, settings);
    killPoint("blobs.written");
    return { current, currentHashes, blobs: blobsResult.value, restaged };
  }

  /**
   * The exact blobs of store files `git add` restaged (null: gone meanwhile). A store file replaced
   * by a symlink or a directory is left as git staged it: it is no longer State Flow's file.
   */
  private async restageStoreFiles(
    paths: readonly string[],
    writes: ReadonlyMap<string, Buffer | null>,
    settings: CommitSettings,
  ): Promise<Map<string, string | null>> {
    const read = await Promise.all(
      paths
        .filter((path) => !writes.has(path))
        .map((path) =>
          readOwnedFile(this.repo.root, path).then(
            (bytes) => [path, bytes] as const,
            (error: unknown) => {
              if (isStoreError(error, "symlink-refused") || isStoreError(error, "not-regular-file")) return null;
              throw error;
            },
          ),
        ),
    );
    return this.writeBlobs(new Map(read.filter((entry) => entry !== null)), settings);
  }

  /**
   * Once the ref moved: the live files and the index follow the commit, then the journal goes.
   * Returns the branch head as it was just before the index was installed (the caller compares).
   */
  private async installPublication(
    prepared: Promise<PreparedWrites>,
    deletions: readonly string[],
    attempt: PublicationAttempt,
    ref: string,
  ): Promise<string | null> {
    await (await prepared).commit();
    for (const path of deletions) await removeOwnedFile(this.repo.root, path);
    // index.lock is held: only a writer that ignores it could have moved the branch since.
    const head = await this.repo.refValue(ref);
    await installIndex(this.repo.info.gitDir, attempt.index);
    attempt.indexLock = undefined;
    await removeJournal(this.repo.journalPath);
    return head;
  }

  /**
   * What a failed publication throws. Before the ref moved nothing was published, so its isolated
   * index, temp copies, index.lock and journal go; after, the commit is accepted and the lock and
   * the journal stay, so that the next publication can finish it.
   */
  private async abandonPublication(error: unknown, attempt: PublicationAttempt): Promise<unknown> {
    if (attempt.keepLock && error instanceof Error) {
      return new StoreError(
        "io-failed",
        `The cohort was committed to Git but writing the live files or the index failed: ${error.message}. ` +
          `The publication lock ${this.repo.lockPath} is kept. Fix the cause (permissions, free space), then remove ` +
          `the lock and retry: the next publication finishes this one from its journal ${this.repo.journalPath}.`,
        { file: this.repo.lockPath, cause: error },
      );
    }
    if (!attempt.keepLock) {
      await releaseIndexLock(join(this.repo.info.gitDir, "index.lock"), attempt.indexLock).catch(() => undefined);
      attempt.indexLock = undefined;
      await unlink(attempt.index).catch(() => undefined);
      if (attempt.prepared)
        await attempt.prepared.then(
          (p) => p.abort(),
          () => undefined,
        );
      if (attempt.journaled) await removeJournal(this.repo.journalPath).catch(() => undefined);
    }
    return error;
  }

  /**
   * Takes git's index.lock for the rest of the publication (see the file comment) and bases the
   * isolated index on the caller's index as it is under that lock: entries someone staged since
   * the copy stay staged. Returns the sha1 of that index (null: none), for recovery.
   */
  private async holdIndexLock(attempt: PublicationAttempt): Promise<string | null> {
    const stamp = indexLockStamp();
    await createIndexLock(this.repo.root, join(this.repo.info.gitDir, "index.lock"), stamp);
    attempt.indexLock = stamp;
    const indexPath = join(this.repo.info.gitDir, "index");
    let current: { bytes: Buffer; stat: BigIntStats } | null;
    try {
      current = { stat: lstatSync(indexPath, { bigint: true }), bytes: readFileSync(indexPath) };
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw gitFailed(`Reading ${indexPath}`, error, indexPath);
      current = null;
    }
    if (!sameBytes(current?.bytes ?? null, attempt.seed ?? null)) this.rebaseIsolatedIndex(attempt, current);
    return current === null ? null : createHash("sha1").update(current.bytes).digest("hex");
  }

  /**
   * The caller's index changed between the copy and index.lock (someone staged): the isolated
   * index becomes that index plus what this publication changed, so the user's entries survive.
   * Where both changed a path, a store file keeps this publication's exact blob and any other
   * file the user's entry. Only stat data refreshed: nothing to merge.
   */
  private rebaseIsolatedIndex(attempt: PublicationAttempt, current: { bytes: Buffer; stat: BigIntStats } | null): void {
    const indexPath = join(this.repo.info.gitDir, "index");
    let staged: { bytes: Buffer; stat: BigIntStats } | null;
    try {
      staged = { stat: lstatSync(attempt.index, { bigint: true }), bytes: readFileSync(attempt.index) };
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw gitFailed("Reading the staged index", error);
      staged = null;
    }
    const [seed, mine, theirs] = [attempt.seed ?? null, staged?.bytes ?? null, current?.bytes ?? null].map((bytes) =>
      bytes === null ? EMPTY_INDEX : parseIndex(bytes),
    );
    if (!seed!.supported || !mine!.supported || !theirs!.supported) {
      throw new StoreError(
        "stale-basis",
        `Stale basis: the index ${indexPath} changed while publishing (a git command staged something), and ` +
          `State Flow merges only the index formats it reads in-process. Nothing was published; retry.`,
        { file: indexPath },
      );
    }
    if (sameEntries(seed!.entries, theirs!.entries)) return;
    const merged = mergeIndexEntries(seed!.entries, mine!.entries, theirs!.entries);
    try {
      writeFileSync(attempt.index, serializeIndex(merged, theirs!.version, null));
      // Its stat data is from both indexes: the earlier mtime keeps git's racy-clean check safe.
      const stats = [current?.stat, staged?.stat].filter((s): s is BigIntStats => s !== undefined);
      const earliest = stats.sort((a, b) => (a.mtimeNs < b.mtimeNs ? -1 : 1))[0];
      if (earliest) backdateIndex(attempt.index, earliest);
    } catch (error) {
      throw gitFailed("Writing the merged index", error);
    }
  }

  /**
   * Fills the isolated index with the base commit plus the complete non-ignored worktree delta: a
   * copy of the caller's index (it tracks HEAD and keeps the stat cache; `read-tree` of the base
   * when there is none) and `git add -A -v`. Returns the store files it restaged (their bytes
   * went through the repository's attributes; see restageStoreFiles). One process (two without a
   * caller's index).
   */
  private async stageWorktree(attempt: PublicationAttempt, base: string | null): Promise<string[]> {
    const env = { GIT_INDEX_FILE: attempt.index };
    attempt.seed = null;
    if (base !== null) {
      try {
        attempt.seed = seedIndexSync(join(this.repo.info.gitDir, "index"), attempt.index);
        killPoint("index.copied");
      } catch (error) {
        if (errnoOf(error) !== "ENOENT") throw gitFailed("Copying the index", error);
      }
      if (attempt.seed === null) await this.repo.git(["read-tree", base], "Reading the base tree", env);
    }
    const exclude = [FILE_LOCK_NAME, FILE_JOURNAL_NAME, `.${FILE_JOURNAL_NAME}.*.tmp`].map(
      (name) => `:(exclude,top,glob)${name}`,
    );
    const out = await this.repo.git(
      ["add", "-A", "-v", "--", ".", ...exclude, `:(exclude,top,glob)${STORE_TEMP_GLOB}`],
      "Staging the worktree delta (git add -A)",
      env,
    );
    killPoint("index.staged");
    return storeFilesAdded(out);
  }

  /**
   * Writes the prepared bytes as blobs: loose objects in-process for sha1 (in parallel, fsynced
   * when core.fsync asks for it), else `git hash-object -w` (sha256, shared repositories). null = deletion.
   */
  private async writeBlobs(
    overlay: ReadonlyMap<string, Buffer | null>,
    settings: CommitSettings,
  ): Promise<Map<string, string | null>> {
    const objectsDir = join(this.repo.info.commonDir, "objects");
    const ids = new Map<string, string | null>();
    const entries = [...overlay].sort(([a], [b]) => comparePaths(a, b));
    if (this.repo.info.objectFormat === "sha1" && !settings.sharedRepository) {
      // Small blobs without an fsync are written synchronously (while git add runs in its own
      // process): a thread-pool round trip per call costs more than deflating and writing them.
      const fsync = settings.fsyncObjects;
      const write = async (bytes: Buffer) =>
        !fsync && bytes.length <= SYNC_BLOB_BYTES
          ? writeSmallLooseObjectSync(objectsDir, "blob", bytes)
          : writeLooseObject(objectsDir, "blob", bytes, { fsync });
      const written = await Promise.all(entries.map(([, bytes]) => (bytes === null ? null : write(bytes)))).catch(
        (error: unknown) => {
          throw gitFailed(`Writing blob objects into ${objectsDir}`, error, objectsDir);
        },
      );
      entries.forEach(([path], i) => ids.set(path, written[i] ?? null));
    } else {
      for (const [path, bytes] of entries) {
        ids.set(
          path,
          bytes === null
            ? null
            : (
                await this.repo.git(
                  ["hash-object", "-w", "--no-filters", "--stdin"],
                  "Writing a blob",
                  undefined,
                  bytes,
                )
              ).trim(),
        );
      }
    }
    return ids;
  }
}

/**
 * Copies the caller's index with its mtime (less 1 µs) and returns its bytes: git judges "racily
 * clean" entries against the index file's mtime, so a copy must not look newer than the stat
 * data inside it (when `git add -A` has nothing to write, the copy is what gets installed).
 * Synchronous: the index is small, and the live files' fsyncs occupy libuv's thread pool
 * meanwhile, where an async copy would wait before git can even start.
 */
function seedIndexSync(from: string, to: string): Buffer {
  const stat = lstatSync(from, { bigint: true });
  const bytes = readFileSync(from);
  writeFileSync(to, bytes, { flag: "wx", mode: 0o644 });
  backdateIndex(to, stat);
  return bytes;
}

/**
 * A `file:` basis names the live cohort it was read as (an adopted file-backed branch); the commit
 * then holds the complete current files, whatever stale blobs HEAD had. Any other basis is a Git revision.
 */
function assertPublishableBasis(basis: PublishRequest["basis"]): void {
  const pointer = basis.pointer;
  if (pointer === null || isGitPointer(pointer)) return;
  if (provesFileCohort(pointer, basis.hashes)) return;
  throw new StoreError(
    "invalid-pointer",
    `The basis ${pointer.revision} is neither a Git revision nor the file cohort its hashes form; publish on a ` +
      `snapshot loaded from this repository (loadCurrent), which commits the complete current files.`,
  );
}
