// Git backend: an exact-root repository at the store root; one local commit per accepted cohort.
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
//
// Reads: current view = HEAD's blob of each member and the live files compared blob-by-blob.
// HEAD's blobs come from the cohort this backend committed or verified last while HEAD still names
// it, else from HEAD's loose objects in-process (git-lookup.ts: another session's or the user's
// commit), else from one `git cat-file --batch-check` (HEAD + HEAD:<member>: packed objects).
// A past revision = `git ls-tree` (regular-file modes) + one `git cat-file --batch` (no output
// limit, the worktree never moves).

import { createHash } from "node:crypto";
import {
  constants as fsConstants,
  lstatSync,
  readFileSync,
  utimesSync,
  writeFileSync,
  type BigIntStats,
} from "node:fs";
import { access, lstat, realpath, unlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { killPoint } from "../fs/crash-points.ts";
import { ensureStoreAttributes } from "./store-attributes.ts";
import { initRepositoryAtomically } from "./git-init.ts";
import { createIndexLock, indexLockStamp, installIndex, isolatedIndexPath, releaseIndexLock } from "./index-lock.ts";
import { EMPTY_INDEX, mergeIndexEntries, restageEntries, sameEntries, storeFilesAdded } from "./index-merge.ts";
import { removeLeftovers } from "./leftovers.ts";
import { explainLockHeld, finishInterruptedPublication, type RecoveryRepo } from "./git-recovery.ts";
import { KnownBlobCache } from "./known-blobs.ts";
import { readPendingRecord, writePendingRecord, type PendingRecord } from "./pending-record.ts";
import {
  FILE_JOURNAL_NAME,
  FILE_LOCK_NAME,
  hashFiles,
  isFilePointer,
  journalEntries,
  loadIfCurrent,
  provesFileCohort,
  sameBytes,
  sameFiles,
  splitWrites,
  validateRequest,
  verifyBasis,
} from "../cohort-basis.ts";
import {
  STORE_TEMP_GLOB,
  prepareOwnedFilesAtomic,
  readOwnedFile,
  readOwnedFilesSync,
  removeOwnedFile,
  sha256Hex,
  type PreparedWrites,
} from "../fs/fs-safe.ts";
import { JOURNAL_FILE_NAME, finishBeforeReading, removeJournal, writeJournal } from "../fs/journal.ts";
import { comparePaths } from "../layout.ts";
import {
  LOCK_FILE_NAME,
  acquirePublicationLock,
  lockExists,
  lockHeldError,
  readLockOwner,
  readUntilSettled,
} from "../fs/lock.ts";
import {
  commitObjectBody,
  gitDateOf,
  gitObjectId,
  isPlainCommitMessage,
  writeLooseObject,
  writeSmallLooseObjectSync,
  zeroObjectId,
} from "./plumbing/git-objects.ts";
import { indexPathOf, overlayEntries, parseIndex, serializeIndex } from "./plumbing/git-index.ts";
import { TreeConflictError, buildTrees, cacheTreeIds } from "./plumbing/git-tree.ts";
import { batchCheckAtCommit } from "./plumbing/git-lookup.ts";
import { isPlainBranchRef, prepareRefUpdate } from "./plumbing/git-refs.ts";
import { GitCommandError, GitRunner, gitFailed, type GitProcessCounter } from "./git-runner.ts";
import { GitRemote, type GitPushResult, type RemoteAnswer } from "./git-remote.ts";
import { readRevisionFiles } from "./git-revision.ts";
import { identityMissing, looksLikeIdentityError, readCommitSettings, type CommitSettings } from "./git-settings.ts";
import { StoreError, errnoOf, isStoreError } from "../store-error.ts";
import type {
  CohortSnapshot,
  LoadCurrentOptions,
  PublishReceipt,
  PublishRequest,
  StoreBackend,
  StorePointer,
} from "../backend.ts";

const REFLOG_MESSAGE = "state-flow: accepted cohort";
/** Index size up to which a publication without known trees still builds them in-process. */
const COLD_IN_PROCESS_ENTRIES = 256;
/** Blobs up to this size are deflated and written with synchronous calls (a 128 KiB state's checkpoint is one). */
const SYNC_BLOB_BYTES = 256 * 1024;

interface CommitStagedOptions {
  readonly ref: string;
  readonly base: string | null;
  readonly env: Record<string, string>;
  readonly blobs: ReadonlyMap<string, string | null>;
  /** Store files `git add` restaged, with the blob of their exact bytes (their stat data is kept). */
  readonly restaged: ReadonlyMap<string, string | null>;
  readonly message: string;
  /** Runs once the commit id is known, before git's ref locks are taken (the journal is written there). */
  readonly beforeRefUpdate?: (revision: string) => Promise<void>;
}

/** What a failing publication has to undo, and whether it may (see GitBackend.abandonPublication). */
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

/** Git blob id of bytes (sha1 or sha256 object format). */
function gitBlobId(bytes: Uint8Array, objectFormat: "sha1" | "sha256" = "sha1"): string {
  return gitObjectId("blob", bytes, objectFormat);
}

function isGitPointer(pointer: StorePointer | null | undefined): boolean {
  return pointer != null && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(pointer.revision);
}

export interface GitRepoInfo {
  readonly root: string;
  readonly gitDir: string;
  readonly commonDir: string;
  readonly objectFormat: "sha1" | "sha256";
}

export interface OpenGitOptions {
  readonly root: string;
  readonly binary: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly counter?: GitProcessCounter;
  readonly generation: string;
  /** Initialize an exact-root repository when `<root>/.git` is absent (explicit start). */
  readonly init?: boolean;
}

/**
 * Opens the exact-root repository at `root`. Returns null when there is none and `init` is false.
 * Costs one git process (rev-parse), plus `git init` when initializing.
 */
export async function openGitBackend(options: OpenGitOptions): Promise<GitBackend | null> {
  const root = resolve(options.root);
  const runner = new GitRunner({
    cwd: root,
    env: options.env,
    binary: options.binary,
    ...(options.counter ? { counter: options.counter } : {}),
  });
  let hasDotGit = true;
  try {
    await lstat(join(root, ".git"));
  } catch (error) {
    if (errnoOf(error) !== "ENOENT")
      throw new StoreError("io-failed", `Cannot inspect ${join(root, ".git")}: ${String(error)}`, {
        file: join(root, ".git"),
      });
    hasDotGit = false;
  }
  if (!hasDotGit) {
    if (!options.init) return null;
    try {
      await initRepositoryAtomically(root, runner);
    } catch (error) {
      throw gitFailed(`Initializing the state repository at ${root}`, error, root);
    }
  }
  let out: string;
  try {
    // Spawned directly: every resume opens the backend, and simple-git's per-call overhead showed in its profile.
    out = await runner.execText([
      "rev-parse",
      "--show-toplevel",
      "--absolute-git-dir",
      "--git-common-dir",
      "--show-object-format",
    ]);
  } catch (error) {
    throw gitFailed(`Opening the state repository at ${root}`, error, root);
  }
  const [top, gitDir, common, format] = out.split("\n");
  const realRoot = await realpath(root);
  if (!top || !gitDir || !common || (await realpath(top).catch(() => top)) !== realRoot) {
    throw new StoreError(
      "git-not-exact-root",
      `The state store ${root} is not the top level of its own Git repository (git reports ${top ?? "nothing"}). ` +
        `State Flow publishes only from an exact-root repository; ` +
        `remove the stray .git or choose another storage root.`,
      { file: root },
    );
  }
  const info: GitRepoInfo = {
    root,
    gitDir,
    commonDir: resolve(root, common),
    objectFormat: format === "sha256" ? "sha256" : "sha1",
  };
  return new GitBackend(info, runner, options.generation);
}

export class GitBackend implements StoreBackend {
  readonly kind = "git" as const;
  readonly root: string;
  readonly info: GitRepoInfo;
  readonly lockPath: string;
  readonly journalPath: string;
  readonly runner: GitRunner;
  private readonly generation: string;
  /** The store attributes in info/attributes were checked (once per backend, under the lock). */
  private attributesChecked = false;
  private settings: Promise<CommitSettings> | undefined;
  /** The tree ids of the last commit this backend published (they exist while it is reachable). */
  private knownTrees: { readonly revision: string; readonly ids: ReadonlySet<string> } | undefined;
  /** The blobs at the revision this backend committed or verified last: reads of it need no git. */
  private readonly knownBlobs: KnownBlobCache;
  private readonly remotes: GitRemote;

  constructor(info: GitRepoInfo, runner: GitRunner, generation: string) {
    this.info = info;
    this.root = info.root;
    this.runner = runner;
    this.generation = generation;
    this.lockPath = join(info.commonDir, LOCK_FILE_NAME);
    this.journalPath = join(info.commonDir, JOURNAL_FILE_NAME);
    this.knownBlobs = new KnownBlobCache(info.commonDir, info.objectFormat);
    this.remotes = new GitRemote({ runner, commonDir: info.commonDir, headBranch: () => this.headBranch() });
  }

  get processCount(): number {
    return this.runner.counter.count;
  }

  /**
   * Verifies that git has a configured (not auto-detected) author and committer identity and
   * caches it with the commit-relevant configuration for this backend generation (three
   * processes, concurrently, once; see commitSettings).
   */
  async checkIdentity(): Promise<void> {
    await this.commitSettings();
  }

  /**
   * What an in-process commit and ref update need from git, read once per backend generation:
   * the author and committer identity from `git -c user.useConfigOnly=true var GIT_*_IDENT`
   * (git honours the GIT_AUTHOR_* and GIT_COMMITTER_* variables there, dates included; nothing is invented) and
   * `git config -z -l`. A failure is not cached (the next call retries).
   */
  private commitSettings(): Promise<CommitSettings> {
    this.settings ??= readCommitSettings(this.runner, this.info).catch((error: unknown) => {
      this.settings = undefined;
      throw error;
    });
    return this.settings;
  }

  readFile(path: string): Promise<Buffer | null> {
    return readOwnedFile(this.root, path);
  }

  // ---------------------------------------------------------------------------------------------
  // Refs read from files (0 processes); a layout we do not understand falls back to rev-parse.

  private async headBranch(): Promise<string> {
    let head: string;
    try {
      // Small files read synchronously: cheaper than a thread-pool round trip, several per publication.
      head = readFileSync(join(this.info.gitDir, "HEAD"), "utf8").trim();
    } catch (error) {
      throw gitFailed(`Reading ${join(this.info.gitDir, "HEAD")}`, error);
    }
    const match = /^ref: (refs\/heads\/.+)$/.exec(head);
    if (!match?.[1]) {
      throw new StoreError(
        "git-failed",
        `HEAD of the state repository ${this.root} is detached (${head}). State Flow commits to a branch; ` +
          `run git -C ${this.root} checkout <branch> (after checking which commit holds the newest state) and retry.`,
        { file: join(this.info.gitDir, "HEAD") },
      );
    }
    return match[1];
  }

  private async refValue(ref: string): Promise<string | null> {
    const shaPattern = this.info.objectFormat === "sha256" ? /^[0-9a-f]{64}$/ : /^[0-9a-f]{40}$/;
    try {
      const loose = readFileSync(join(this.info.commonDir, ref), "utf8").trim();
      if (shaPattern.test(loose)) return loose;
      throw new Error(`unexpected content in ${ref}`);
    } catch (error) {
      if (errnoOf(error) !== "ENOENT" && errnoOf(error) !== "ENOTDIR") return this.revParseRef(ref);
    }
    try {
      const packed = readFileSync(join(this.info.commonDir, "packed-refs"), "utf8");
      for (const line of packed.split("\n")) {
        const [sha, name] = line.split(" ");
        if (name === ref && sha && shaPattern.test(sha)) return sha;
      }
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") return this.revParseRef(ref);
    }
    return null;
  }

  private async revParseRef(ref: string): Promise<string | null> {
    try {
      const out = (await this.runner.execText(["rev-parse", "-q", "--verify", `${ref}^{commit}`])).trim();
      return out === "" ? null : out;
    } catch (error) {
      if (error instanceof GitCommandError && error.exitCode === 1) return null;
      throw gitFailed(`Resolving ${ref}`, error);
    }
  }

  /** The current branch head (null when the branch is unborn). */
  async head(): Promise<{ ref: string; revision: string | null }> {
    const ref = await this.headBranch();
    return { ref, revision: await this.refValue(ref) };
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  /**
   * Current view: HEAD plus the live member files, verified blob-by-blob against HEAD's tree.
   * One git process. A member whose live bytes differ from HEAD fails closed (`worktree-diverged`).
   */
  async loadCurrent(paths: readonly string[], options: LoadCurrentOptions = {}): Promise<CohortSnapshot> {
    const members = [...paths].sort(comparePaths);
    for (const path of members) assertGitPath(path);
    await finishBeforeReading(this.journalPath, this.lockPath, this.generation, () =>
      finishInterruptedPublication(this.recoveryRepo()),
    ).catch(async (error: unknown) => {
      throw await explainLockHeld(this.recoveryRepo(), error);
    });
    // A publisher moves the ref before it renames the live files and releases its lock: a read
    // that overlaps it can see the new HEAD beside old files (or the reverse) and the lock already
    // gone. So a divergence is read again after a moment; only the same HEAD beside the same bytes
    // twice is a real one (HEAD only moves forward, and stream files never repeat their bytes).
    const settle = async (
      { listing, files }: { listing: string; files: Map<string, Buffer | null> },
      previous: { listing: string; files: Map<string, Buffer | null> } | null,
    ): Promise<CohortSnapshot | undefined> => {
      try {
        return this.verifyCurrent(members, listing, files);
      } catch (error) {
        if (!isStoreError(error, "worktree-diverged")) throw error;
        // Known blobs can be stale only if a file changed while its cohort was being committed
        // (git add then staged other bytes than the ones read): git itself decides from here on.
        this.knownBlobs.forget();
        // Live files written file-only (Git was absent meanwhile) whose session files are the ones
        // the caller's branch selected are that branch's accepted state: current, under its pointer.
        // Its shared files are read as they are, as any file-only restore reads them.
        const proven = options.provenCohort;
        const hashes = hashFiles(files);
        if (proven && provesFileCohort(proven, hashes))
          return { pointer: { revision: proven.revision }, files, hashes };
        // While the lock is held that is a retryable lock-held, not a divergence.
        if (await lockExists(this.lockPath))
          throw await explainLockHeld(
            this.recoveryRepo(),
            lockHeldError(this.lockPath, await readLockOwner(this.lockPath)),
          );
        const head = (listing: string) => listing.split("\n")[0] ?? "";
        if (previous && head(previous.listing) === head(listing) && sameFiles(previous.files, files)) throw error;
        return undefined;
      }
    };
    return readUntilSettled(
      this.lockPath,
      () => this.readHeadAndFiles(members),
      settle,
      (attempt) => 2 * attempt,
    );
  }

  /**
   * The live files, read while HEAD's blobs are resolved: from the cohort this backend committed
   * last when the branch still names it (no process), else by git (one process).
   */
  private async readHeadAndFiles(
    members: readonly string[],
  ): Promise<{ listing: string; files: Map<string, Buffer | null> }> {
    const [checked, files] = await Promise.allSettled([
      this.headBlobsListing(members),
      readMembers(this.root, members),
    ]);
    if (files.status === "rejected") throw files.reason;
    if (checked.status === "rejected")
      throw gitFailed("Reading HEAD of the state repository (git cat-file --batch-check)", checked.reason);
    return { listing: checked.value, files: files.value };
  }

  /** HEAD and the blob of each member at HEAD, in `git cat-file --batch-check`'s output format. */
  private async headBlobsListing(members: readonly string[]): Promise<string> {
    const head = await this.headBranch()
      .then((ref) => this.refValue(ref))
      .catch(() => null);
    const known = await this.knownBlobs.listingAt(head, members);
    if (known !== null) return known;
    // Another writer moved HEAD (the normal case on a shared store): its objects are loose until a gc.
    const listing =
      head !== null && this.info.objectFormat === "sha1"
        ? batchCheckAtCommit(join(this.info.commonDir, "objects"), head, members)
        : null;
    if (listing !== null) return listing;
    return this.runner.execText(["cat-file", "--batch-check"], {
      input: `HEAD\n${members.map((p) => `HEAD:${p}\n`).join("")}`,
    });
  }

  private verifyCurrent(members: readonly string[], out: string, files: Map<string, Buffer | null>): CohortSnapshot {
    const lines = out.split("\n");
    const headLine = lines[0] ?? "";
    const hashes = hashFiles(files);
    if (headLine.endsWith(" missing")) {
      // Unborn branch: nothing committed yet; the live files are the (uncommitted) current view.
      return { pointer: null, files, hashes };
    }
    const [revision, type] = headLine.split(" ");
    if (type !== "commit" || !revision)
      throw gitFailed("Reading HEAD", new Error(`unexpected output ${JSON.stringify(headLine)}`));
    const verified = new Map<string, string | null>();
    members.forEach((path, index) => {
      const line = lines[index + 1] ?? "";
      const committed = line.endsWith(" missing") ? null : (line.split(" ")[0] ?? null);
      const bytes = files.get(path) ?? null;
      const live = bytes === null ? null : gitBlobId(bytes, this.info.objectFormat);
      verified.set(path, live);
      if (committed !== live) {
        throw new StoreError(
          "worktree-diverged",
          `The live file ${path} ${live === null ? "is missing but" : "differs from what"} ` +
            `the committed revision ${revision} ` +
            `${committed === null ? "does not contain it" : "records"}. ` +
            `A publisher was interrupted or the file was edited by hand. ` +
            `Inspect with git -C ${this.root} diff HEAD -- ${path}; ` +
            (committed === null
              ? `remove it with git -C ${this.root} rm -q --cached --ignore-unmatch -- ${path} && ` +
                `rm -f ${join(this.root, path)} `
              : `restore it (file and index entry) with git -C ${this.root} checkout HEAD -- ${path} `) +
            `or commit the intended bytes, then retry. Nothing was read as current state.`,
          { file: path },
        );
      }
    });
    this.knownBlobs.remember(revision!, verified);
    return { pointer: { revision }, files, hashes };
  }

  /** The newest commit of the current branch that changed `path`; null when none did. One git process. */
  async lastCommitOf(path: string): Promise<StorePointer | null> {
    assertGitPath(path);
    let out: string;
    try {
      out = (await this.runner.execText(["log", "-1", "--format=%H", "--", path])).trim();
    } catch (error) {
      if (error instanceof GitCommandError && /does not have any commits/i.test(error.stderr)) return null;
      throw gitFailed(`Finding the commit that last wrote ${path}`, error);
    }
    return out === "" ? null : { revision: out };
  }

  /** Reads the member files at a past revision without touching the worktree. Two git processes, no output limit. */
  async loadRevision(pointer: StorePointer, paths: readonly string[]): Promise<CohortSnapshot> {
    // A branch recorded before the store was adopted into Git names a file cohort.
    if (isFilePointer(pointer)) return loadIfCurrent(pointer, await this.loadCurrent(paths, { provenCohort: pointer }));
    if (!isGitPointer(pointer)) {
      throw new StoreError(
        "invalid-pointer",
        `${JSON.stringify(pointer.revision)} is neither a full Git commit hash nor a file cohort pointer.`,
      );
    }
    const members = [...paths].sort(comparePaths);
    for (const path of members) assertGitPath(path);
    const live = await this.knownBlobs.liveFilesAt(pointer.revision, members, () => readMembers(this.root, members));
    if (live) return { pointer: { revision: pointer.revision }, files: live, hashes: hashFiles(live) };
    const files = await readRevisionFiles(this.runner, this.root, pointer.revision, members);
    return { pointer: { revision: pointer.revision }, files, hashes: hashFiles(files) };
  }

  // ---------------------------------------------------------------------------------------------
  // Publication

  async publish(request: PublishRequest): Promise<PublishReceipt> {
    const members = validateRequest(request);
    for (const path of members) assertGitPath(path);
    assertPublishableBasis(request.basis);
    const settings = await this.commitSettings(); // identity first: nothing is written without one
    // A basis HEAD has already left is refused before the lock (and checked again under it).
    if (request.basisUnread) this.assertBasisIsHead(request, await this.head());
    const lock = await acquirePublicationLock(this.lockPath, {
      generation: this.generation,
      purpose: "git publication",
    }).catch(async (error: unknown) => {
      throw await explainLockHeld(this.recoveryRepo(), error);
    });
    const attempt: PublicationAttempt = {
      index: isolatedIndexPath(this.info.gitDir),
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
    await finishInterruptedPublication(this.recoveryRepo());
    removeLeftovers(
      { root: this.root, gitDir: this.info.gitDir, commonDir: this.info.commonDir },
      members.map((path) => dirname(path)),
    );
    if (!this.attributesChecked) {
      await ensureStoreAttributes(this.info.commonDir).catch((error: unknown) => {
        throw gitFailed(`Writing ${join(this.info.commonDir, "info", "attributes")}`, error);
      });
      this.attributesChecked = true;
    }
    const { ref, revision: head } = await this.head();
    if (request.basisUnread) this.assertBasisIsHead(request, { ref, revision: head });
    // Independent work in parallel (all of it invisible until the ref moves): the per-file
    // compare-and-swap reads, staging the worktree delta into the isolated index, writing the
    // prepared blobs into the object database, and writing + fsyncing the live files'
    // same-directory temp copies (renamed into place only after the ref moved; `git add -A`
    // excludes them by name). A failure to prepare them publishes nothing.
    const { puts, deletions } = splitWrites(request.writes);
    const prepared = prepareOwnedFilesAtomic(this.root, puts);
    attempt.prepared = prepared;
    prepared.catch(() => undefined); // awaited below; never an unhandled rejection
    const settled = await this.settlePreparation(request, members, settings, attempt, { ref, head });
    const { current, currentHashes, blobs, restaged } = settled;
    // The reconciled base: every member is unchanged, so a head that moved through other scopes' commits is adopted.
    const changed = changedMembers(members, request.writes, current, currentHashes);
    // (A `file:` basis is never shortcut: HEAD does not hold that cohort, the commit adopts it.)
    if (changed.length === 0 && head !== null && !isFilePointer(request.basis.pointer)) {
      await unlink(attempt.index).catch(() => undefined);
      await prepared.then(
        (p) => p.abort(),
        () => undefined,
      );
      return { pointer: { revision: head }, hashes: currentHashes, changed, committed: false };
    }
    const revision = await this.commitStaged({
      ref,
      base: head,
      env: { GIT_INDEX_FILE: attempt.index },
      blobs,
      restaged,
      message: request.message ?? "state-flow: accepted cohort",
      beforeRefUpdate: async (revision) => {
        const temps = (await prepared).temps;
        const indexBasis = await this.holdIndexLock(attempt);
        attempt.journaled = true; // from here on a journal may exist: a failure must remove it
        await writeJournal(this.journalPath, {
          version: 1,
          pid: process.pid,
          generation: this.generation,
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
      committedBlobs.set(path, bytes === null ? null : gitBlobId(bytes, this.info.objectFormat));
    }
    this.knownBlobs.committed(revision, committedBlobs);
    // The index.lock protocol above either merged the caller's index or refused: it is always in step.
    return { pointer: { revision }, hashes, changed, committed: true, indexSynced: true };
  }

  /**
   * A writer that ignores git's index.lock (plumbing such as `git update-ref`, or the lock removed
   * by hand) moved the branch after this commit: the cohort is installed in the live files and
   * the index but the branch no longer names it. Nothing is undone; the caller decides.
   */
  private refMovedError(ref: string, revision: string, head: string | null): StoreError {
    const git = `git -C ${this.root}`;
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
      readMembers(this.root, members),
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
          readOwnedFile(this.root, path).then(
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
    for (const path of deletions) await removeOwnedFile(this.root, path);
    // index.lock is held: only a writer that ignores it could have moved the branch since.
    const head = await this.refValue(ref);
    await installIndex(this.info.gitDir, attempt.index);
    attempt.indexLock = undefined;
    await removeJournal(this.journalPath);
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
          `The publication lock ${this.lockPath} is kept. Fix the cause (permissions, free space), then remove ` +
          `the lock and retry: the next publication finishes this one from its journal ${this.journalPath}.`,
        { file: this.lockPath, cause: error },
      );
    }
    if (!attempt.keepLock) {
      await releaseIndexLock(join(this.info.gitDir, "index.lock"), attempt.indexLock).catch(() => undefined);
      attempt.indexLock = undefined;
      await unlink(attempt.index).catch(() => undefined);
      if (attempt.prepared)
        await attempt.prepared.then(
          (p) => p.abort(),
          () => undefined,
        );
      if (attempt.journaled) await removeJournal(this.journalPath).catch(() => undefined);
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
    await createIndexLock(this.root, join(this.info.gitDir, "index.lock"), stamp);
    attempt.indexLock = stamp;
    const indexPath = join(this.info.gitDir, "index");
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
    const indexPath = join(this.info.gitDir, "index");
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
   * Finishes or discards the publication a killed process left behind (its journal), under the
   * caller's lock. The ref decides: at the journal's commit, the commit is accepted and the live
   * files and the index are brought to it; still at its base, nothing was published and the temp
   * copies go. Git's own ref and index locks that publication took are removed, and then what
   * publications killed earlier left (see removeLeftovers).
   */

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
        attempt.seed = seedIndexSync(join(this.info.gitDir, "index"), attempt.index);
        killPoint("index.copied");
      } catch (error) {
        if (errnoOf(error) !== "ENOENT") throw gitFailed("Copying the index", error);
      }
      if (attempt.seed === null) await this.git(["read-tree", base], "Reading the base tree", env);
    }
    const exclude = [FILE_LOCK_NAME, FILE_JOURNAL_NAME, `.${FILE_JOURNAL_NAME}.*.tmp`].map(
      (name) => `:(exclude,top,glob)${name}`,
    );
    const out = await this.git(
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
    const objectsDir = join(this.info.commonDir, "objects");
    const ids = new Map<string, string | null>();
    const entries = [...overlay].sort(([a], [b]) => comparePaths(a, b));
    if (this.info.objectFormat === "sha1" && !settings.sharedRepository) {
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
                await this.git(["hash-object", "-w", "--no-filters", "--stdin"], "Writing a blob", undefined, bytes)
              ).trim(),
        );
      }
    }
    return ids;
  }

  /**
   * Overlays the exact prepared blobs on the staged isolated index and publishes one commit:
   * the overlay and tree (in-process, else `update-index --index-info` + `write-tree`), the
   * commit object (in-process, else `commit-tree -p <base>`; identity from git config only),
   * then — after `beforeRefUpdate` — a compare-and-swap of the ref against the reconciled base
   * (in-process through git's lockfile protocol, else `update-ref <ref> <new> <base>`). No
   * process on the hot path; two for each part that needs git's own.
   */
  private async commitStaged(options: CommitStagedOptions): Promise<string> {
    const { ref, base, env, blobs, restaged, message } = options;
    const zero = zeroObjectId(this.info.objectFormat);
    const settings = await this.commitSettings();
    const inProcessOverlay = settings.sharedRepository
      ? null
      : this.overlayInProcess(env.GIT_INDEX_FILE!, base, blobs, restaged, settings.fsyncObjects);
    const built = inProcessOverlay ?? (await this.overlayByGit(env, blobs, restaged, zero));
    const inProcessCommit =
      settings.processPathReason === null &&
      isPlainBranchRef(ref) &&
      isPlainCommitMessage(message) &&
      !(await isExecutable(settings.referenceTransactionHook));
    const revision = inProcessCommit
      ? await this.commitInProcess(options, built.tree, settings, zero)
      : await this.commitByGit(options, built.tree, zero);
    // What the next publication may trust: the trees of the commit this one made.
    this.knownTrees = built.treeIds ? { revision, ids: built.treeIds } : undefined;
    return revision;
  }

  /** The commit object written in-process and the ref moved by git's lockfile protocol: exact, two processes fewer. */
  private async commitInProcess(
    options: CommitStagedOptions,
    tree: string,
    settings: CommitSettings,
    zero: string,
  ): Promise<string> {
    const { ref, base, message } = options;
    const date = gitDateOf(Date.now());
    const committer = `${settings.committer} ${settings.committerDate ?? date}`;
    const author = `${settings.author} ${settings.authorDate ?? date}`;
    const body = commitObjectBody({ tree, parents: base ? [base] : [], author, committer, message });
    let revision: string;
    try {
      const objectsDir = join(this.info.commonDir, "objects");
      revision = writeSmallLooseObjectSync(objectsDir, "commit", body, { fsync: settings.fsyncObjects });
    } catch (error) {
      throw gitFailed("Writing the commit object", error);
    }
    killPoint("commit.written");
    await options.beforeRefUpdate?.(revision);
    const refUpdate = await prepareRefUpdate({
      gitDir: this.info.gitDir,
      commonDir: this.info.commonDir,
      ref,
      newId: revision,
      oldId: base,
      zeroId: zero,
      committer,
      message: REFLOG_MESSAGE,
      logAllRefUpdates: settings.logAllRefUpdates,
      headPointsHere: true, // `ref` was read from HEAD; re-checked under HEAD.lock
      lockTimeoutMs: settings.lockTimeoutMs,
    });
    await refUpdate.commit();
    return revision;
  }

  /** `git commit-tree` and `git update-ref`, where the in-process path would not be exact. */
  private async commitByGit(options: CommitStagedOptions, tree: string, zero: string): Promise<string> {
    const { ref, base, message } = options;
    let revision: string;
    try {
      const args = ["-c", "user.useConfigOnly=true", "commit-tree", tree, ...(base ? ["-p", base] : []), "-m", message];
      revision = (await this.runner.execText(args)).trim();
    } catch (error) {
      if (looksLikeIdentityError(error)) throw identityMissing(error);
      throw gitFailed("Creating the commit (git commit-tree)", error);
    }
    killPoint("commit.written");
    await options.beforeRefUpdate?.(revision);
    try {
      await this.runner.exec(["update-ref", "-m", REFLOG_MESSAGE, ref, revision, base ?? zero]);
    } catch (error) {
      const casFailed = /but expected|reference already exists|cannot lock ref/i;
      if (error instanceof GitCommandError && casFailed.test(error.stderr)) {
        throw new StoreError(
          "stale-basis",
          `Stale basis: ${ref} of the state repository moved away from ${base ?? "(unborn)"} while publishing ` +
            `(compare-and-swap failed). Nothing was published; reload the current view and retry. ` +
            `Git said: ${error.message}`,
          { file: ref, cause: error },
        );
      }
      throw gitFailed(`Moving ${ref} to the new commit (git update-ref)`, error, ref);
    }
    return revision;
  }

  /**
   * The overlay and the tree without git processes (see git-index.ts, git-tree.ts): parses the
   * staged isolated index, overlays the prepared blobs exactly as `update-index --index-info`
   * would (the restaged store files keep the stat data `git add` just recorded), writes the tree
   * objects that do not exist yet and rewrites the isolated index. null =
   * something git-index.ts does not handle (the caller runs git's processes instead; nothing was
   * changed). The rewritten index keeps the mtime of the one `git add -A` wrote (minus 1 µs): git
   * judges "racily clean" entries against the index file's mtime, and the stat data inside is
   * from that moment, so a later mtime could make an edit in between look clean.
   */
  private overlayInProcess(
    indexPath: string,
    base: string | null,
    blobs: ReadonlyMap<string, string | null>,
    restaged: ReadonlyMap<string, string | null>,
    fsync: boolean,
  ): { tree: string; treeIds: Set<string> | null } | null {
    if (this.info.objectFormat !== "sha1") return null;
    // Synchronous I/O on purpose: the live files' fsyncs occupy libuv's thread pool meanwhile, and
    // the index (just written by git, in the page cache) would queue behind them for milliseconds.
    // `git add -A` with nothing to stage on an unborn branch leaves no index file: an empty index.
    let staged: [Buffer, BigIntStats] | null;
    try {
      staged = [readFileSync(indexPath), lstatSync(indexPath, { bigint: true })];
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw gitFailed("Reading the staged index", error);
      staged = null;
    }
    const parsed =
      staged === null
        ? ({ supported: true, version: 2, entries: [], cacheTree: null } as const)
        : parseIndex(staged[0]);
    if (!parsed.supported) return null;
    // Trees of the last commit this backend published are reachable from it, hence present: the
    // cache tree's entries for them are reused (elsewhere the trees are rebuilt and written).
    const known = this.knownTrees?.revision === base ? this.knownTrees.ids : new Set<string>();
    // Without that knowledge every tree would be rebuilt and, when git has packed them, written
    // again as loose objects (seconds for a store with thousands of sessions): git's write-tree
    // checks its packs instead, and teaches this backend the tree ids for the next publication.
    if (base !== null && known.size === 0 && parsed.entries.length > COLD_IN_PROCESS_ENTRIES) return null;
    const { kept, added } = restageEntries(parsed.entries, restaged);
    const entries = overlayEntries(kept, new Map([...added, ...blobs]));
    let build;
    try {
      build = buildTrees(entries, {
        cached: parsed.cacheTree,
        changed: [...restaged.keys(), ...blobs.keys()].map(indexPathOf),
        exists: (oid) => known.has(oid),
      });
    } catch (error) {
      if (error instanceof TreeConflictError) return null; // git's own rules decide
      throw error;
    }
    const objectsDir = join(this.info.commonDir, "objects");
    try {
      for (const tree of build.computed)
        if (!known.has(tree.id)) writeSmallLooseObjectSync(objectsDir, "tree", tree.body, { fsync });
    } catch (error) {
      throw gitFailed("Writing the tree objects", error);
    }
    killPoint("trees.written");
    try {
      writeFileSync(indexPath, serializeIndex(entries, parsed.version, build.cacheTree));
      if (staged !== null) backdateIndex(indexPath, staged[1]);
    } catch (error) {
      throw gitFailed("Writing the staged index", error);
    }
    killPoint("index.overlaid");
    return { tree: build.root, treeIds: cacheTreeIds(build.cacheTree) };
  }

  /**
   * The overlay and the tree through git: `update-index -z --index-info` (deletions with mode 0)
   * and `write-tree`, which also records the complete cache tree in the isolated index; its tree
   * ids are learned (when git-index.ts reads that index) so the next publication can run in-process.
   */
  private async overlayByGit(
    env: Record<string, string>,
    blobs: ReadonlyMap<string, string | null>,
    restaged: ReadonlyMap<string, string | null>,
    zero: string,
  ): Promise<{ tree: string; treeIds: Set<string> | null }> {
    let info = "";
    for (const [path, id] of [...restaged, ...blobs])
      info += id === null ? `0 ${zero}\t${path}\0` : `100644 ${id}\t${path}\0`;
    if (info) await this.git(["update-index", "-z", "--index-info"], "Overlaying the prepared files", env, info);
    const tree = (await this.git(["write-tree"], "Writing the tree", env)).trim();
    let treeIds: Set<string> | null = null;
    if (this.info.objectFormat === "sha1" && env.GIT_INDEX_FILE) {
      const parsed = parseIndex(readFileSync(env.GIT_INDEX_FILE));
      if (parsed.supported && parsed.cacheTree?.oid === tree) treeIds = cacheTreeIds(parsed.cacheTree);
    }
    return { tree, treeIds };
  }

  /** What recovering an interrupted publication needs from this backend (git-recovery.ts). */
  private recoveryRepo(): RecoveryRepo {
    return {
      root: this.root,
      info: this.info,
      journalPath: this.journalPath,
      lockPath: this.lockPath,
      refValue: (ref) => this.refValue(ref),
      headBranch: () => this.headBranch(),
      git: (args, what, env, input) => this.git(args, what, env, input),
    };
  }

  private async git(
    args: string[],
    what: string,
    env?: Record<string, string>,
    input?: Buffer | string,
  ): Promise<string> {
    try {
      return await this.runner.execText(args, { ...(env ? { env } : {}), ...(input === undefined ? {} : { input }) });
    } catch (error) {
      throw gitFailed(what, error);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Remote publication (git-remote.ts)

  /** Size and mtime of the repository's config file: a remote added or removed changes it. */
  configStamp(): Promise<string | null> {
    return this.remotes.configStamp();
  }

  /** The remote to publish to (branch.<b>.remote, else `origin`, else the only remote); null = local-only. */
  publicationRemote(): Promise<string | null> {
    return this.remotes.publicationRemote();
  }

  /** Pushes an existing accepted commit to the branch on the publication remote. Never re-applies anything. */
  pushRevision(revision: string, signal?: AbortSignal): Promise<GitPushResult> {
    return this.remotes.pushRevision(revision, signal);
  }

  /** Whether the publication remote already has `revision` on this branch; null: no remote or no answer. */
  remoteHas(revision: string): Promise<boolean | null> {
    return this.remotes.remoteHas(revision);
  }

  /** What the publication remote answers about `revision`, with the cause when it cannot be asked (abortable). */
  askRemote(revision: string, signal?: AbortSignal): Promise<RemoteAnswer> {
    return this.remotes.askRemote(revision, signal);
  }

  /** What this session still owes the remote (storage/git/pending-record.ts); null: nothing. */
  readPending(sessionKey: string): Promise<PendingRecord | null> {
    return readPendingRecord(this.info.commonDir, sessionKey);
  }

  writePending(sessionKey: string, record: PendingRecord): Promise<void> {
    return writePendingRecord(this.info.commonDir, sessionKey, record);
  }
}

function assertGitPath(path: string): void {
  if (/[\n\r]/.test(path)) {
    throw new StoreError(
      "invalid-key",
      `${JSON.stringify(path)} contains a line break, which Git batch reads cannot express; ` +
        `use another storage root or cwd.`,
      {
        file: path,
      },
    );
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
 * Gives a rewritten index the times of the index its stat data came from, 1 µs earlier (never
 * later: utimes takes a double, which cannot hold every nanosecond), so git's racy-clean check
 * re-hashes at least the entries it would have.
 */
function backdateIndex(path: string, from: BigIntStats): void {
  utimesSync(path, Number(from.atimeNs) / 1e9, Number(from.mtimeNs - 1000n) / 1e9);
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

/** The members whose bytes after the publication differ from the live files'. */
function changedMembers(
  members: readonly string[],
  writes: ReadonlyMap<string, Buffer | null>,
  current: ReadonlyMap<string, Buffer | null>,
  currentHashes: ReadonlyMap<string, string | null>,
): string[] {
  return members.filter((p) => {
    const bytes = writes.has(p) ? (writes.get(p) ?? null) : (current.get(p) ?? null);
    return (bytes === null ? null : sha256Hex(bytes)) !== currentHashes.get(p);
  });
}

/** The members' live bytes (read synchronously when called: start any process before). */
async function readMembers(root: string, members: readonly string[]): Promise<Map<string, Buffer | null>> {
  return readOwnedFilesSync(root, members);
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}
