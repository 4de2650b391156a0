// The handle on a store's exact-root repository that reads, commits, publication and recovery
// share: where it is (root, git directories, object format), the git runner, the publication lock
// and journal paths, the commit settings read once per backend generation, the blobs known at the
// revision committed or verified last, and the refs read from their files. Kept apart so that each
// of those modules depends on this one handle, not on each other.

import { constants as fsConstants, readFileSync, utimesSync, type BigIntStats } from "node:fs";
import { access } from "node:fs/promises";
import { join } from "node:path";
import { JOURNAL_FILE_NAME } from "../fs/journal.ts";
import { LOCK_FILE_NAME } from "../fs/lock.ts";
import { StoreError, errnoOf } from "../store-error.ts";
import type { StorePointer } from "../backend.ts";
import type { RecoveryRepo } from "./git-recovery.ts";
import { GitCommandError, gitFailed, type GitRunner } from "./git-runner.ts";
import { readCommitSettings, type CommitSettings } from "./git-settings.ts";
import { KnownBlobCache } from "./known-blobs.ts";
import { gitObjectId } from "./plumbing/git-objects.ts";

export interface GitRepoInfo {
  readonly root: string;
  readonly gitDir: string;
  readonly commonDir: string;
  readonly objectFormat: "sha1" | "sha256";
}

export class GitRepo implements RecoveryRepo {
  readonly root: string;
  readonly info: GitRepoInfo;
  readonly runner: GitRunner;
  /** The runtime generation recorded in the publication lock and journal. */
  readonly generation: string;
  readonly lockPath: string;
  readonly journalPath: string;
  /** The blobs at the revision this backend committed or verified last: reads of it need no git. */
  readonly knownBlobs: KnownBlobCache;
  private settings: Promise<CommitSettings> | undefined;

  constructor(info: GitRepoInfo, runner: GitRunner, generation: string) {
    this.info = info;
    this.root = info.root;
    this.runner = runner;
    this.generation = generation;
    this.lockPath = join(info.commonDir, LOCK_FILE_NAME);
    this.journalPath = join(info.commonDir, JOURNAL_FILE_NAME);
    this.knownBlobs = new KnownBlobCache(info.commonDir, info.objectFormat);
  }

  /**
   * What an in-process commit and ref update need from git, read once per backend generation:
   * the author and committer identity from `git -c user.useConfigOnly=true var GIT_*_IDENT`
   * (git honours the GIT_AUTHOR_* and GIT_COMMITTER_* variables there, dates included; nothing is invented) and
   * `git config -z -l`. A failure is not cached (the next call retries).
   */
  commitSettings(): Promise<CommitSettings> {
    this.settings ??= readCommitSettings(this.runner, this.info).catch((error: unknown) => {
      this.settings = undefined;
      throw error;
    });
    return this.settings;
  }

  // ---------------------------------------------------------------------------------------------
  // Refs read from files (0 processes); a layout we do not understand falls back to rev-parse.

  /** The branch HEAD names (`refs/heads/<b>`); a detached HEAD is refused with what to do. */
  async headBranch(): Promise<string> {
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

  /** The commit a ref names, from its loose file or packed-refs; null = unborn. */
  async refValue(ref: string): Promise<string | null> {
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

  /** Runs git for its text output; a failure is a git-failed StoreError naming `what`. */
  async git(args: string[], what: string, env?: Record<string, string>, input?: Buffer | string): Promise<string> {
    try {
      return await this.runner.execText(args, { ...(env ? { env } : {}), ...(input === undefined ? {} : { input }) });
    } catch (error) {
      throw gitFailed(what, error);
    }
  }
}

/** Git blob id of bytes (sha1 or sha256 object format). */
export function gitBlobId(bytes: Uint8Array, objectFormat: "sha1" | "sha256" = "sha1"): string {
  return gitObjectId("blob", bytes, objectFormat);
}

/** Whether a pointer names a full Git commit hash (else it is a file cohort pointer or invalid). */
export function isGitPointer(pointer: StorePointer | null | undefined): boolean {
  return pointer != null && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(pointer.revision);
}

export function assertGitPath(path: string): void {
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
 * Gives a rewritten index the times of the index its stat data came from, 1 µs earlier (never
 * later: utimes takes a double, which cannot hold every nanosecond), so git's racy-clean check
 * re-hashes at least the entries it would have.
 */
export function backdateIndex(path: string, from: BigIntStats): void {
  utimesSync(path, Number(from.atimeNs) / 1e9, Number(from.mtimeNs - 1000n) / 1e9);
}

export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}
