// The one small interface between the semantic store and its durable backends (file-only and
// Git): pointers, cohort snapshots and bases, publish requests and receipts. Types only.

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
  /**
   * The basis was not read from the live store for this publication: it is the cohort the caller
   * published or loaded last. The per-file compare-and-swap checks it as always; Git also refuses
   * it as stale-basis unless HEAD is still the basis revision (only a live read verifies the files
   * against a HEAD that moved).
   */
  readonly basisUnread?: boolean;
  /**
   * Git only, for bringing in a fetched line: the new commit's parents instead of HEAD (HEAD must still be the
   * basis revision; the branch moves by compare-and-swap against it). A fast-forward names the fetched commit;
   * a two-parent commit names HEAD and the fetched commit.
   */
  readonly parents?: readonly string[];
  /** Git only: an existing commit the branch moves to instead of a new one when the result's tree is its tree. */
  readonly reuse?: { readonly revision: string; readonly tree: string };
}

export interface PublishReceipt {
  readonly pointer: StorePointer;
  /** sha256 of every member after publication (the next basis). */
  readonly hashes: ReadonlyMap<string, string | null>;
  /** Members whose bytes changed. */
  readonly changed: readonly string[];
  /** False when nothing changed (no commit, no write). */
  readonly committed: boolean;
  /**
   * Git: whether the caller's index now tracks the commit with every entry the user staged kept.
   * Always true: a publication that could not take git's index.lock is refused (`index-locked`).
   */
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
