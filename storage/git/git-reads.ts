// Reads of a Git store: the current view and past revisions, without moving the worktree.
//
// Current view = HEAD's blob of each member and the live files compared blob-by-blob. HEAD's
// blobs come from the cohort this backend committed or verified last while HEAD still names it,
// else from HEAD's loose objects in-process (git-lookup.ts: another session's or the user's
// commit), else from one `git cat-file --batch-check` (HEAD + HEAD:<member>: packed objects).
// A past revision = `git ls-tree` (regular-file modes) + one `git cat-file --batch` (no output
// limit, the worktree never moves).

import { join } from "node:path";
import { hashFiles, isFilePointer, loadIfCurrent, provesFileCohort, sameFiles } from "../cohort-basis.ts";
import { readOwnedFilesSync, sha256Hex } from "../fs/fs-safe.ts";
import { finishBeforeReading } from "../fs/journal.ts";
import { lockExists, lockHeldError, readLockOwner, readUntilSettled } from "../fs/lock.ts";
import { comparePaths } from "../layout.ts";
import { StoreError, isStoreError } from "../store-error.ts";
import type { CohortSnapshot, LoadCurrentOptions, StorePointer } from "../backend.ts";
import { explainLockHeld, finishInterruptedPublication } from "./git-recovery.ts";
import { assertGitPath, gitBlobId, isGitPointer, type GitRepo } from "./git-repo.ts";
import { readRevisionFiles } from "./git-revision.ts";
import { GitCommandError, gitFailed } from "./git-runner.ts";
import { shellWord } from "./git-settings.ts";
import { batchCheckAtCommit } from "./plumbing/git-lookup.ts";

export class GitReader {
  private readonly repo: GitRepo;

  constructor(repo: GitRepo) {
    this.repo = repo;
  }

  /**
   * Current view: HEAD plus the live member files, verified blob-by-blob against HEAD's tree.
   * One git process. A member whose live bytes differ from HEAD fails closed (`worktree-diverged`).
   */
  async loadCurrent(paths: readonly string[], options: LoadCurrentOptions = {}): Promise<CohortSnapshot> {
    const repo = this.repo;
    const members = [...paths].sort(comparePaths);
    for (const path of members) assertGitPath(path);
    await finishBeforeReading(repo.journalPath, repo.lockPath, repo.generation, () =>
      finishInterruptedPublication(repo),
    ).catch(async (error: unknown) => {
      throw await explainLockHeld(repo, error);
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
        repo.knownBlobs.forget();
        // Live files written file-only (Git was absent meanwhile) whose session files are the ones
        // the caller's branch selected are that branch's accepted state: current, under its pointer.
        // Its shared files are read as they are, as any file-only restore reads them.
        const proven = options.provenCohort;
        const hashes = hashFiles(files);
        if (proven && provesFileCohort(proven, hashes))
          return { pointer: { revision: proven.revision }, files, hashes };
        // While the lock is held that is a retryable lock-held, not a divergence.
        if (await lockExists(repo.lockPath))
          throw await explainLockHeld(repo, lockHeldError(repo.lockPath, await readLockOwner(repo.lockPath)));
        const head = (listing: string) => listing.split("\n")[0] ?? "";
        if (previous && head(previous.listing) === head(listing) && sameFiles(previous.files, files)) throw error;
        return undefined;
      }
    };
    return readUntilSettled(
      repo.lockPath,
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
      readMembers(this.repo.root, members),
    ]);
    if (files.status === "rejected") throw files.reason;
    if (checked.status === "rejected")
      throw gitFailed("Reading HEAD of the state repository (git cat-file --batch-check)", checked.reason);
    return { listing: checked.value, files: files.value };
  }

  /** HEAD and the blob of each member at HEAD, in `git cat-file --batch-check`'s output format. */
  private async headBlobsListing(members: readonly string[]): Promise<string> {
    const repo = this.repo;
    const head = await repo
      .headBranch()
      .then((ref) => repo.refValue(ref))
      .catch(() => null);
    const known = await repo.knownBlobs.listingAt(head, members);
    if (known !== null) return known;
    // Another writer moved HEAD (the normal case on a shared store): its objects are loose until a gc.
    const listing =
      head !== null && repo.info.objectFormat === "sha1"
        ? batchCheckAtCommit(join(repo.info.commonDir, "objects"), head, members)
        : null;
    if (listing !== null) return listing;
    return repo.runner.execText(["cat-file", "--batch-check"], {
      input: `HEAD\n${members.map((p) => `HEAD:${p}\n`).join("")}`,
    });
  }

  private verifyCurrent(members: readonly string[], out: string, files: Map<string, Buffer | null>): CohortSnapshot {
    const root = this.repo.root;
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
      const live = bytes === null ? null : gitBlobId(bytes, this.repo.info.objectFormat);
      verified.set(path, live);
      if (committed !== live) throw worktreeDiverged(root, path, revision, committed, live);
    });
    this.repo.knownBlobs.remember(revision!, verified);
    return { pointer: { revision }, files, hashes };
  }

  /**
   * The newest commit of the current branch that changed any of `paths`; null when none did. One git
   * process. (A runtime's `revision: "self"` is this commit for its config/meta pair: commits that
   * leave the pair alone, the user's or other scopes', do not change it.)
   */
  async lastCommitOf(paths: readonly string[]): Promise<StorePointer | null> {
    for (const path of paths) assertGitPath(path);
    let out: string;
    try {
      out = (await this.repo.runner.execText(["log", "-1", "--format=%H", "--", ...paths])).trim();
    } catch (error) {
      if (error instanceof GitCommandError && /does not have any commits/i.test(error.stderr)) return null;
      throw gitFailed(`Finding the commit that last wrote ${paths.join(", ")}`, error);
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
    const root = this.repo.root;
    const live = await this.repo.knownBlobs.liveFilesAt(pointer.revision, members, () => readMembers(root, members));
    if (live) return { pointer: { revision: pointer.revision }, files: live, hashes: hashFiles(live) };
    const files = await readRevisionFiles(this.repo.runner, root, pointer.revision, members);
    return { pointer: { revision: pointer.revision }, files, hashes: hashFiles(files) };
  }
}

/** The members whose bytes after the publication differ from the live files'. */
export function changedMembers(
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
export async function readMembers(root: string, members: readonly string[]): Promise<Map<string, Buffer | null>> {
  return readOwnedFilesSync(root, members);
}

/**
 * A live store file that is not what HEAD commits: which of the three cases it is (changed, missing,
 * or never committed), the command that shows it, and the command that puts it back, each as a sentence.
 */
function worktreeDiverged(
  root: string,
  path: string,
  revision: string,
  committed: string | null,
  live: string | null,
): StoreError {
  const git = `git -C ${shellWord(root)}`;
  const [found, inspect, undo] =
    committed === null
      ? [
          `The live file ${path} exists, but the committed revision ${revision} does not contain it.`,
          `${git} status --short -- ${path}`,
          `remove it with ${git} rm -q --cached --ignore-unmatch -- ${path} && rm -f ${shellWord(join(root, path))}`,
        ]
      : [
          live === null
            ? `The live file ${path} is missing, but the committed revision ${revision} contains it.`
            : `The live file ${path} differs from its version in the committed revision ${revision}.`,
          `${git} diff HEAD -- ${path}`,
          `restore the committed version (file and index entry) with ${git} checkout HEAD -- ${path}`,
        ];
  return new StoreError(
    "worktree-diverged",
    `${found} A publisher was interrupted or the file was changed by hand; nothing was read as current state. ` +
      `Inspect it with ${inspect}, then either ${undo}, or commit the intended bytes; then retry.`,
    { file: path },
  );
}
