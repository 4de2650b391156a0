// The small durable store interface and `openStore`, which chooses the backend:
//   - the git executable is absent           → file-only (FileBackend);
//   - git present, `<root>/.git` exists      → Git (GitBackend);
//   - git present, no repository, initGit    → `git init` at the exact root, then Git;
//   - git present, no repository, no initGit → file-only for now (manual-mode startup, status and
//     branch restoration never initialize Git); `gitAvailable` tells the caller adoption is possible.
// Any failure of a present git is an error (never a silent fallback to files).
//
// The store works on bytes and store-relative paths only. What the bytes mean (checkpoint/patch
// codec, meta.json content, identity records) belongs to the temporal core and its caller.

import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { FileBackend } from "./file-backend.ts";
import { openGitBackend, type GitBackend } from "./git-backend.ts";
import { findGitExecutable, type GitProcessCounter } from "./git-runner.ts";

/** Pi checkpoint pointer: Git `{"revision":"<full sha>"}` or file-only `{"revision":"file:<64 hex>"}`. */
export interface StorePointer {
  readonly revision: string;
}

/** What a publication is built on: the pointer and the sha256 of every cohort member (null = absent). */
export interface CohortBasis {
  readonly pointer: StorePointer | null;
  readonly hashes: ReadonlyMap<string, string | null>;
}

/** A loaded cohort: raw bytes of every member (null = absent). Usable directly as a basis. */
export interface CohortSnapshot extends CohortBasis {
  readonly files: ReadonlyMap<string, Buffer | null>;
}

export interface PublishRequest {
  /** The snapshot the cohort was staged on; its hashes name the complete cohort. */
  readonly basis: CohortBasis;
  /** Exact prepared bytes per member (null = delete). Members not named stay as they are. */
  readonly writes: ReadonlyMap<string, Buffer | null>;
  /** Git commit message (Git backend only). */
  readonly message?: string;
}

export interface PublishReceipt {
  readonly pointer: StorePointer;
  /** sha256 of every member after publication (the next basis). */
  readonly hashes: ReadonlyMap<string, string | null>;
  /** Members whose bytes changed. */
  readonly changed: readonly string[];
  /** False when nothing changed (no commit, no write). */
  readonly committed: boolean;
  /** Git: false when git held index.lock so the caller's index could not be synchronized. */
  readonly indexSynced?: boolean;
}

export interface LoadCurrentOptions {
  readonly provenCohort?: StorePointer | null;
}

export interface StoreBackend {
  readonly kind: "file" | "git";
  readonly root: string;
  readonly lockPath: string;
  /**
   * Current view of the cohort members (file: computes the exact-cohort pointer; Git: verified
   * against HEAD). `provenCohort`: a `file:` pointer the caller's branch selected; in Git, live
   * files that differ from HEAD but form exactly that cohort are returned as current under that
   * pointer (an active file-backed branch identifying its cohort, so its next commit adopts it).
   */
  loadCurrent(paths: readonly string[], options?: LoadCurrentOptions): Promise<CohortSnapshot>;
  /** The members at a past pointer (file: only while it is still current; Git: any commit, worktree untouched). */
  loadRevision(pointer: StorePointer, paths: readonly string[]): Promise<CohortSnapshot>;
  /** Publishes one prepared cohort under the lock with per-file compare-and-swap against the basis. */
  publish(request: PublishRequest): Promise<PublishReceipt>;
  /** Raw bytes of one store file (e.g. config.json / meta.json) or null when absent. */
  readFile(path: string): Promise<Buffer | null>;
}

export interface OpenStoreOptions {
  readonly root: string;
  /** Runtime generation (recorded in locks; a reload starts a new one). */
  readonly generation?: string;
  /** Environment for git (default process.env): PATH decides whether git is present. */
  readonly env?: NodeJS.ProcessEnv;
  /** Explicit git executable (absent file ⇒ file-only). */
  readonly gitBinary?: string;
  /** Explicit start: initialize an exact-root repository when none exists, and check the commit identity. */
  readonly initGit?: boolean;
  /** Shared git process counter (bench/tests). */
  readonly counter?: GitProcessCounter;
}

export interface Store extends StoreBackend {
  /** True when a git executable exists (so a file-only store can be adopted into Git by an explicit start). */
  readonly gitAvailable: boolean;
  /** The Git backend when kind === "git" (push, adoption, head). */
  readonly git: GitBackend | null;
  readonly counter: GitProcessCounter;
}

class OpenedStore implements Store {
  readonly kind: "file" | "git";
  readonly root: string;
  readonly lockPath: string;
  readonly gitAvailable: boolean;
  readonly git: GitBackend | null;
  readonly counter: GitProcessCounter;
  private readonly backend: StoreBackend;

  constructor(backend: StoreBackend, git: GitBackend | null, gitAvailable: boolean, counter: GitProcessCounter) {
    this.backend = backend;
    this.kind = backend.kind;
    this.root = backend.root;
    this.lockPath = backend.lockPath;
    this.git = git;
    this.gitAvailable = gitAvailable;
    this.counter = counter;
  }
  loadCurrent(paths: readonly string[], options?: LoadCurrentOptions) {
    return this.backend.loadCurrent(paths, options);
  }
  loadRevision(pointer: StorePointer, paths: readonly string[]) {
    return this.backend.loadRevision(pointer, paths);
  }
  publish(request: PublishRequest) {
    return this.backend.publish(request);
  }
  readFile(path: string) {
    return this.backend.readFile(path);
  }
}

export function newGeneration(): string {
  return `${process.pid}-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

/** Opens the store at `root`. One git process when a repository exists (rev-parse); none when git is absent or unused. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const root = resolve(options.root);
  const generation = options.generation ?? newGeneration();
  const counter = options.counter ?? { count: 0 };
  const env = options.env ?? process.env;
  const binary = findGitExecutable(env, options.gitBinary);
  if (binary === null) return new OpenedStore(new FileBackend(root, { generation }), null, false, counter);
  const git = await openGitBackend({ root, binary, env, counter, generation, init: options.initGit ?? false });
  if (git === null) return new OpenedStore(new FileBackend(root, { generation }), null, true, counter);
  if (options.initGit) await git.checkIdentity();
  return new OpenedStore(git, git, true, counter);
}
