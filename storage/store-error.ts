// Named errors of the durable byte layer (layout, files, locks, backends, publication).
// Every refusal carries a stable `code`, the store-relative or absolute `file` it concerns when
// there is one, and a message that names the file, the rule broken and what to do.

export type StoreErrorCode =
  | "invalid-key" // a cwd/session key or store-relative path that is not a plain owned name
  | "foreign-identity" // a key already owned by another canonical cwd / session
  | "symlink-refused" // a store file or directory is a symbolic link
  | "not-regular-file" // a store path exists but is not a regular file / directory
  | "io-failed" // an unexpected filesystem error (permission, disk full, …)
  | "lock-held" // the publication lock exists; never stolen
  | "lock-lost" // the lock file we held was replaced or removed under us
  | "stale-basis" // a cohort file moved since the caller's basis was read
  | "rollback-conflict" // a failed publication's rollback found bytes someone else wrote and preserved them
  | "recovery-conflict" // finishing an interrupted publication found bytes someone else wrote
  | "invalid-request" // a publish request that is not a subset of its cohort, etc.
  | "partial-pair" // one member of a checkpoint/patches pair is missing
  | "stream-mismatch" // a scope's checkpoint/patches pair is not the one its meta.json records
  | "invalid-scope-meta" // a shared scope's meta.json cannot be read or belongs to another scope
  | "pointer-unavailable" // a file pointer no longer matches the current files
  | "invalid-pointer" // a pointer with the wrong syntax for the backend
  | "worktree-diverged" // live files differ from the committed HEAD blobs
  | "revision-missing" // a Git revision / object that is not in the repository
  | "not-regular-object" // a Git tree entry that is not a regular file blob
  | "git-failed" // any git failure other than the executable being absent
  | "git-identity-missing" // no user.name / user.email configured; we invent none
  | "git-not-exact-root" // the store root is not the top level of its own repository
  | "index-locked" // git's index.lock is held by another process; nothing was committed
  | "ref-moved" // a writer that ignores git's index.lock moved the branch while a commit was being installed
  | "push-failed" // a remote push attempt failed (publication stays pending)
  | "sync-conflict" // a scope changed on this machine and on the remote: the person chooses a side
  | "reapply-refused" // this machine's transitions of a scope do not apply to the remote's state
  | "invalid-pending-record" // a session's pending-publication record is not one
  | "ambiguous-snapshot" // a scope holds both a legacy state.json and a current checkpoint
  | "orphaned-tail" // a legacy state.json beside a patches.jsonl that has no checkpoint
  | "invalid-legacy-state" // a legacy state.json that is not one scope's state document
  | "migration-failed"; // a legacy migration did not verify and could not restore the old bytes

export class StoreError extends Error {
  readonly code: StoreErrorCode;
  readonly file: string | undefined;

  constructor(code: StoreErrorCode, message: string, options?: { file?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "StoreError";
    this.code = code;
    this.file = options?.file;
  }
}

export function isStoreError(error: unknown, code?: StoreErrorCode): error is StoreError {
  return error instanceof StoreError && (code === undefined || error.code === code);
}

/** Node errno of an fs error, or undefined. */
export function errnoOf(error: unknown): string | undefined {
  if (error && typeof error === "object" && "code" in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}
