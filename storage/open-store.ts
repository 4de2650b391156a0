// `openStore`, which chooses the durable backend and wraps it as a `Store`:
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
import { lstatSync } from "node:fs";
import { join, resolve } from "node:path";
import { FileBackend } from "./file/file-backend.ts";
import type { GitBackend } from "./git/git-backend.ts";
import { findGitExecutable } from "./git/git-executable.ts";
import type { GitRemote } from "./git/git-remote.ts";
import type { GitSync } from "./git/git-sync.ts";
import type { GitProcessCounter } from "./git/git-runner.ts";
import type { PendingRecord } from "./git/pending-record.ts";
import type { LoadCurrentOptions, PublishRequest, StoreBackend, StorePointer } from "./backend.ts";

export type * from "./backend.ts";
export type { FetchResult, GitPushResult, RemoteAnswer } from "./git/git-remote.ts";
export type { JoinPlan, JoinReceipt, SideChoice, Standing } from "./git/git-sync.ts";
export { scopeOfPath } from "./git/git-sync.ts";
export type { PendingRecord } from "./git/pending-record.ts";

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

/** The publication remote as remote publication uses it: which remote, the push, and what it already has. */
export type PublicationRemote = Pick<
  GitRemote,
  "configStamp" | "publicationRemote" | "pushRevision" | "remoteHas" | "askRemote" | "fetchBranch"
>;

/**
 * What remote publication needs of a Git store, and nothing else of its backend: the remote to push
 * accepted commits to and to ask, and each session's durable record of what it still owes it.
 */
export interface PublicationPort {
  readonly remote: PublicationRemote;
  /** Where the branch stands against the remote's, and bringing a fetched line in (git-sync.ts). */
  readonly sync: GitSync;
  /** What this session still owes the remote (storage/git/pending-record.ts); null: nothing. */
  readPending(sessionKey: string): Promise<PendingRecord | null>;
  writePending(sessionKey: string, record: PendingRecord): Promise<void>;
}

export interface Store extends StoreBackend {
  /** True when a git executable exists (so a file-only store can be adopted into Git by an explicit start). */
  readonly gitAvailable: boolean;
  /** The Git backend when kind === "git" (adoption, head, past layouts). */
  readonly git: GitBackend | null;
  /** Remote publication's view of the Git store; null when file-only. */
  readonly publication: PublicationPort | null;
  readonly counter: GitProcessCounter;
}

function publicationPort(git: GitBackend, records: typeof import("./git/pending-record.ts")): PublicationPort {
  const { readPendingRecord, writePendingRecord } = records;
  const commonDir = git.info.commonDir;
  return {
    remote: git.remote,
    sync: git.sync,
    readPending: (sessionKey) => readPendingRecord(commonDir, sessionKey),
    writePending: (sessionKey, record) => writePendingRecord(commonDir, sessionKey, record),
  };
}

class OpenedStore implements Store {
  readonly kind: "file" | "git";
  readonly root: string;
  readonly lockPath: string;
  readonly gitAvailable: boolean;
  readonly git: GitBackend | null;
  readonly publication: PublicationPort | null;
  readonly counter: GitProcessCounter;
  private readonly backend: StoreBackend;

  constructor(
    backend: StoreBackend,
    git: GitBackend | null,
    gitAvailable: boolean,
    counter: GitProcessCounter,
    publication: PublicationPort | null = null,
  ) {
    this.backend = backend;
    this.kind = backend.kind;
    this.root = backend.root;
    this.lockPath = backend.lockPath;
    this.git = git;
    this.publication = publication;
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

function newGeneration(): string {
  return `${process.pid}-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

/**
 * Opens the store at `root`. One git process when a repository exists (rev-parse); none when git is absent or unused.
 */
/** Whether a git executable is on the environment's PATH now (it may be installed while a session runs). */
export function gitInstalled(env: NodeJS.ProcessEnv): boolean {
  return findGitExecutable(env) !== null;
}

/** True only when `<root>/.git` is certainly absent; any other answer is left to openGitBackend. */
function dotGitAbsent(root: string): boolean {
  try {
    lstatSync(join(root, ".git"));
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const root = resolve(options.root);
  const generation = options.generation ?? newGeneration();
  const counter = options.counter ?? { count: 0 };
  const env = options.env ?? process.env;
  const binary = findGitExecutable(env, options.gitBinary);
  if (binary === null) return new OpenedStore(new FileBackend(root, { generation }), null, false, counter);
  // No repository and no start: file-only, as openGitBackend would decide, without loading the Git
  // backend's modules at all (Pi transpiles each one when the extension loads a store).
  if (!options.initGit && dotGitAbsent(root))
    return new OpenedStore(new FileBackend(root, { generation }), null, true, counter);
  const [{ openGitBackend }, records] = await Promise.all([
    import("./git/git-backend.ts"),
    import("./git/pending-record.ts"),
  ]);
  const git = await openGitBackend({ root, binary, env, counter, generation, init: options.initGit ?? false });
  if (git === null) return new OpenedStore(new FileBackend(root, { generation }), null, true, counter);
  if (options.initGit) await git.checkIdentity();
  return new OpenedStore(git, git, true, counter, publicationPort(git, records));
}
