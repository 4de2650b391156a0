// Recovery of a Git publication a killed process left, and the explanation of the git locks it left.
//
// The publication journal (journal.ts) is written after the isolated index, the temp copies and
// the commit exist and before the ref moves. So the ref decides: still the journal's base, nothing
// was published and the temp copies, the isolated index and the locks the publication took are
// discarded; already the journal's commit, the cohort is accepted and is finished (temp copies
// renamed into place, the isolated index installed). Anything else means someone moved the ref
// since; that is refused with what to check, and nothing is changed.

import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { lstat, readFile, rename, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  INDEX_LOCK_STAMP,
  createIndexLock,
  indexLockStamp,
  indexLockedError,
  installIndex,
  isIndexFile,
  isolatedIndexPath,
  readIndexLockHolder,
  releaseIndexLock,
} from "./index-lock.ts";
import { removeLeftovers } from "./leftovers.ts";
import { zeroObjectId } from "./plumbing/git-objects.ts";
import { discardTemps, readJournal, removeJournal, rollForward, type JournalGit } from "../fs/journal.ts";
import { ownerIsGone, readLockOwner } from "../fs/lock.ts";
import { StoreError, errnoOf, isStoreError } from "../store-error.ts";

/** What recovery needs from the backend of the repository. */
export interface RecoveryRepo {
  readonly root: string;
  readonly info: { readonly gitDir: string; readonly commonDir: string; readonly objectFormat: "sha1" | "sha256" };
  readonly journalPath: string;
  /** The publication lock (lock.ts). */
  readonly lockPath: string;
  /** The commit a ref names, from the ref files; null = unborn. */
  refValue(ref: string): Promise<string | null>;
  /** The branch HEAD names (`refs/heads/<b>`). */
  headBranch(): Promise<string>;
  /** Runs git for its text output; a failure is a git-failed StoreError naming `what`. */
  git(args: string[], what: string, env?: Record<string, string>, input?: Buffer | string): Promise<string>;
}

/**
 * Finishes (the ref names the journal's commit) or discards (the ref is still its base) the
 * publication the journal records; nothing to do without a journal. Callers hold the publication lock.
 */
export async function finishInterruptedPublication(repo: RecoveryRepo): Promise<void> {
  const journal = await readJournal(repo.journalPath);
  if (journal === null) return;
  if (!journal.git) {
    await rollForward(repo.root, repo.journalPath, journal);
  } else {
    const since = (await stat(repo.journalPath)).mtimeMs;
    const git = journal.git;
    const { ref, base, revision, index } = git;
    await removeInterruptedRefLocks(repo, ref, revision, since);
    const head = await repo.refValue(ref);
    if (head === revision) {
      await rollForward(repo.root, repo.journalPath, journal);
      await installInterruptedIndex(repo, git, since);
    } else {
      // Its own index.lock (the stamp the journal records) goes first, so that git can run.
      await releaseIndexLock(join(repo.info.gitDir, "index.lock"), git.indexLock);
      if (head !== base) throw recoveryConflict(repo, ref, base, revision, head);
      await discardTemps(journal);
      await unlink(index).catch(() => undefined);
    }
  }
  await removeJournal(repo.journalPath);
  removeLeftovers(
    { root: repo.root, gitDir: repo.info.gitDir, commonDir: repo.info.commonDir },
    journal.entries.map((entry) => dirname(entry.path)),
  );
}

function recoveryConflict(
  repo: RecoveryRepo,
  ref: string,
  base: string | null,
  revision: string,
  head: string | null,
): StoreError {
  const git = `git -C ${repo.root}`;
  return new StoreError(
    "recovery-conflict",
    `An interrupted publication (journal ${repo.journalPath}) moved ${ref} from ${base ?? "(unborn)"} ` +
      `to ${revision}, but ${ref} is now ${head ?? "(deleted)"}: someone moved it since. Nothing was changed. ` +
      `Check ${git} log and ${git} status, then bring the index and the live files to the commit you want ` +
      `with ${git} restore --source=<commit> --staged --worktree -- . (it also removes the files, and their ` +
      `index entries, that the commit does not have; if git says ${join(repo.info.gitDir, "index.lock")} ` +
      `exists and no git process is running, remove that file first), then delete ${repo.journalPath} and retry.`,
    { file: repo.journalPath },
  );
}

/** Removes `<ref>.lock` and HEAD.lock when the interrupted publication created them (after its journal). */
async function removeInterruptedRefLocks(
  repo: RecoveryRepo,
  ref: string,
  revision: string,
  since: number,
): Promise<void> {
  const ours = async (path: string, content: (text: string) => boolean) => {
    try {
      const st = await stat(path);
      return st.mtimeMs >= since && content(await readFile(path, "utf8"));
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return false;
      throw error;
    }
  };
  const refLock = join(repo.info.commonDir, `${ref}.lock`);
  if (await ours(refLock, (text) => text === "" || text === `${revision}\n`)) await unlink(refLock);
  const headLock = join(repo.info.gitDir, "HEAD.lock");
  if (await ours(headLock, (text) => text === "")) await unlink(headLock);
}

/**
 * Makes the interrupted publication's isolated index the caller's index. Its index.lock, held
 * since before the journal, still holds the stamp (the index was not installed yet) or the new
 * index (killed between the two renames). Any other index.lock is someone else's: refused, the
 * journal stays for a retry. Without one (removed by hand), the index may have changed since.
 */
async function installInterruptedIndex(repo: RecoveryRepo, git: JournalGit, since: number): Promise<void> {
  const lockPath = join(repo.info.gitDir, "index.lock");
  const held = await readFile(lockPath).catch((error: unknown) => {
    if (errnoOf(error) === "ENOENT") return null;
    throw error;
  });
  const isolated = await lstat(git.index).then(
    () => true,
    () => false,
  );
  if (git.indexLock === undefined) {
    // A journal of a version that locked the index only to install it.
    const lockStat = held === null ? null : await stat(lockPath);
    if (lockStat !== null && lockStat.mtimeMs >= since) {
      if (isolated) await unlink(lockPath);
      else return void (await rename(lockPath, join(repo.info.gitDir, "index")));
    }
    if (isolated) await installOverChangedIndex(repo, git);
    return;
  }
  if (held !== null && held.toString("latin1") === git.indexLock) {
    if (isolated) return void (await installIndex(repo.info.gitDir, git.index));
    return void (await unlink(lockPath));
  }
  if (held !== null && !isolated && isIndexFile(held)) {
    return void (await rename(lockPath, join(repo.info.gitDir, "index")));
  }
  if (held !== null) throw indexLockedError(repo.root, lockPath, (await readIndexLockHolder(lockPath)).description);
  if (isolated) await installOverChangedIndex(repo, git);
}

/**
 * Installs an interrupted publication's isolated index under a fresh index.lock. When the index
 * changed since that publication based it (its lock was removed by hand), the commit's changes
 * are laid over the index as it is instead (`git update-index --index-info`, any index format).
 */
async function installOverChangedIndex(repo: RecoveryRepo, git: JournalGit): Promise<void> {
  const stamp = indexLockStamp();
  await createIndexLock(repo.root, join(repo.info.gitDir, "index.lock"), stamp);
  try {
    const indexPath = join(repo.info.gitDir, "index");
    const current = await readFile(indexPath).catch((error: unknown) => {
      if (errnoOf(error) === "ENOENT") return null;
      throw error;
    });
    const basis = current === null ? null : createHash("sha1").update(current).digest("hex");
    if (git.indexBasis === undefined || git.indexBasis === basis)
      return await installIndex(repo.info.gitDir, git.index);
    const merged = isolatedIndexPath(repo.info.gitDir);
    if (current !== null) writeFileSync(merged, current, { flag: "wx" });
    const changes = await commitChanges(repo, git.base, git.revision);
    if (changes !== "")
      await repo.git(["update-index", "-z", "--index-info"], "Merging the index", { GIT_INDEX_FILE: merged }, changes);
    await unlink(git.index).catch(() => undefined);
    await installIndex(repo.info.gitDir, merged);
  } catch (error) {
    await releaseIndexLock(join(repo.info.gitDir, "index.lock"), stamp).catch(() => undefined);
    throw error;
  }
}

/** What `revision` changed against `base`, as `update-index -z --index-info` input (one process). */
async function commitChanges(repo: RecoveryRepo, base: string | null, revision: string): Promise<string> {
  const zero = zeroObjectId(repo.info.objectFormat);
  const args =
    base === null ? ["diff-tree", "-r", "-z", "--root", revision] : ["diff-tree", "-r", "-z", base, revision];
  const out = await repo.git([...args.slice(0, 3), "--no-commit-id", ...args.slice(3)], "Listing the commit's changes");
  const fields = out.split("\0");
  let info = "";
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [, mode, , oid] = (fields[i] ?? "").split(" ");
    const path = fields[i + 1] ?? "";
    if (!mode || !oid || path === "") continue;
    info += /^0+$/.test(mode) ? `0 ${zero}\t${path}\0` : `${mode} ${oid}\t${path}\0`;
  }
  return info;
}

/**
 * A lock-held error whose owner is gone also names git's own locks that publication left (they
 * make the user's git commands fail until the named step is taken; that step removes them).
 */
export async function explainLockHeld(repo: RecoveryRepo, error: unknown): Promise<unknown> {
  if (!isStoreError(error, "lock-held") || error.file !== repo.lockPath) return error;
  if (!ownerIsGone(await readLockOwner(repo.lockPath).catch(() => null))) return error;
  const since = await stat(repo.journalPath).then(
    (st) => st.mtimeMs,
    () => null,
  );
  const ref = await repo.headBranch().catch(() => null);
  const left: string[] = [];
  const indexLock = join(repo.info.gitDir, "index.lock");
  const held = await readFile(indexLock).catch(() => null);
  if (held !== null && (INDEX_LOCK_STAMP.test(held.toString("latin1")) || (since !== null && isIndexFile(held))))
    left.push(indexLock);
  if (since !== null) {
    for (const path of [
      join(repo.info.gitDir, "HEAD.lock"),
      ...(ref ? [join(repo.info.commonDir, `${ref}.lock`)] : []),
    ])
      if (((await stat(path).catch(() => null))?.mtimeMs ?? -1) >= since) left.push(path);
  }
  if (left.length === 0) return error;
  return new StoreError(
    "lock-held",
    `${error.message} Until then git commands in ${repo.root} fail on the git locks that publication left ` +
      `(${left.join(", ")}); that retry removes them. Do not delete them by hand: a git commit in between ` +
      `could revert the interrupted cohort.`,
    { file: repo.lockPath },
  );
}
