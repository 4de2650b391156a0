// Git backend: an exact-root repository at the store root; one local commit per accepted cohort.
// The StoreBackend the rest of storage sees, over one repository handle (git-repo.ts): reads
// (git-reads.ts), the publication protocol (git-publication.ts) and its commit (git-commit.ts),
// and the publication remote (git-remote.ts). Opening it (openGitBackend) decides whether a
// store has its own repository at all.

import { lstat, realpath } from "node:fs/promises";
import { join, resolve } from "node:path";
import { readOwnedFile } from "../fs/fs-safe.ts";
import { keepPrivate } from "../fs/private-modes.ts";
import { StoreError, errnoOf } from "../store-error.ts";
import type {
  CohortSnapshot,
  LoadCurrentOptions,
  PublishReceipt,
  PublishRequest,
  StoreBackend,
  StorePointer,
} from "../backend.ts";
import { GitCommitter } from "./git-commit.ts";
import { initRepositoryAtomically } from "./git-init.ts";
import { GitPublisher } from "./git-publication.ts";
import { GitReader } from "./git-reads.ts";
import { GitSync } from "./git-sync.ts";
import { GitRemote } from "./git-remote.ts";
import { GitRepo, type GitRepoInfo } from "./git-repo.ts";
import { GitRunner, gitFailed, type GitProcessCounter } from "./git-runner.ts";

export type { GitRepoInfo } from "./git-repo.ts";

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
  // A store cloned from the remote arrives with the umask's modes: private from its first open.
  await keepPrivate(root).catch((error: unknown) => {
    throw new StoreError("io-failed", `Cannot make the state store ${root} private (0700/0600): ${String(error)}`, {
      file: root,
    });
  });
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
  private readonly repo: GitRepo;
  private readonly reader: GitReader;
  private readonly publisher: GitPublisher;
  /** The publication remote (pushes and questions); open-store.ts hands it out in its PublicationPort. */
  readonly remote: GitRemote;
  /** Where the branch stands against the remote's, and bringing a fetched line in (git-sync.ts). */
  readonly sync: GitSync;

  constructor(info: GitRepoInfo, runner: GitRunner, generation: string) {
    const repo = new GitRepo(info, runner, generation);
    this.repo = repo;
    this.info = info;
    this.root = info.root;
    this.runner = runner;
    this.lockPath = repo.lockPath;
    this.journalPath = repo.journalPath;
    this.reader = new GitReader(repo);
    this.publisher = new GitPublisher(repo, new GitCommitter(repo));
    this.remote = new GitRemote({ runner, commonDir: info.commonDir, headBranch: () => repo.headBranch() });
    this.sync = new GitSync({
      runner,
      objectFormat: info.objectFormat,
      head: () => repo.head(),
      loadRevision: (pointer, paths) => this.reader.loadRevision(pointer, paths),
      publish: (request) => this.publisher.publish(request),
    });
  }

  get processCount(): number {
    return this.runner.counter.count;
  }

  /**
   * Verifies that git has a configured (not auto-detected) author and committer identity and
   * caches it with the commit-relevant configuration for this backend generation (three
   * processes, concurrently, once; see GitRepo.commitSettings).
   */
  async checkIdentity(): Promise<void> {
    await this.repo.commitSettings();
  }

  readFile(path: string): Promise<Buffer | null> {
    return readOwnedFile(this.root, path);
  }

  /** The current branch head (null when the branch is unborn). */
  head(): Promise<{ ref: string; revision: string | null }> {
    return this.repo.head();
  }

  loadCurrent(paths: readonly string[], options: LoadCurrentOptions = {}): Promise<CohortSnapshot> {
    return this.reader.loadCurrent(paths, options);
  }

  /** The newest commit of the current branch that changed any of `paths`; null when none did. One git process. */
  lastCommitOf(paths: readonly string[]): Promise<StorePointer | null> {
    return this.reader.lastCommitOf(paths);
  }

  loadRevision(pointer: StorePointer, paths: readonly string[]): Promise<CohortSnapshot> {
    return this.reader.loadRevision(pointer, paths);
  }

  publish(request: PublishRequest): Promise<PublishReceipt> {
    return this.publisher.publish(request);
  }
}
