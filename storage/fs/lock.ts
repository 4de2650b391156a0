// Publication lock: one exclusive-create lock file per store (file-only: in the store root;
// Git: in the common Git directory). It is held through capture, commit and rollback. An
// existing lock is never stolen: the caller gets a named `lock-held` error saying who holds it
// and what to do. A lock left by a killed writer stays until a human or an explicit recovery
// step reconciles the owner and removes it.

import { randomBytes } from "node:crypto";
import { closeSync, constants as fsConstants, openSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { lstat, readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { killPoint } from "./crash-points.ts";
import { unlinkQuietlySync } from "./fs-safe.ts";
import { StoreError, errnoOf } from "../store-error.ts";

/** File name of the lock in the store root (file-only) or the common Git directory (Git). */
export const LOCK_FILE_NAME = "state-flow-publication.lock";

export interface LockOwner {
  readonly pid: number;
  readonly host: string;
  /** ISO time the lock was taken. */
  readonly acquiredAt: string;
  /** Runtime generation of the owner (a reload/shutdown starts a new generation). */
  readonly generation: string;
  /** Random token proving that a lock file is still ours when released. */
  readonly token: string;
  readonly purpose: string;
}

export interface HeldLock {
  readonly path: string;
  readonly owner: LockOwner;
  /** Removes the lock if it is still ours; throws `lock-lost` if someone replaced or removed it. */
  release(): Promise<void>;
}

function processAlive(pid: number): boolean | undefined {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ESRCH") return false;
    return undefined; // EPERM: alive but not ours
  }
}

/** Reads the owner recorded in a lock file; null when no lock exists; `{unreadable}` when corrupt. */
export async function readLockOwner(path: string): Promise<LockOwner | { unreadable: string } | null> {
  return readFile(path, "utf8").then(parseLockOwner, lockReadFailure);
}

function readLockOwnerSync(path: string): LockOwner | { unreadable: string } | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    return lockReadFailure(error);
  }
  return parseLockOwner(text);
}

function lockReadFailure(error: unknown): { unreadable: string } | null {
  if (errnoOf(error) === "ENOENT") return null;
  return { unreadable: error instanceof Error ? error.message : String(error) };
}

function parseLockOwner(text: string): LockOwner | { unreadable: string } {
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    if (
      typeof value.pid === "number" &&
      typeof value.host === "string" &&
      typeof value.acquiredAt === "string" &&
      typeof value.generation === "string" &&
      typeof value.token === "string"
    ) {
      return { purpose: "", ...value } as LockOwner;
    }
  } catch {
    // fall through
  }
  return { unreadable: `unrecognised content ${JSON.stringify(text.slice(0, 120))}` };
}

function describeOwner(owner: LockOwner | { unreadable: string } | null): string {
  if (owner === null) return "an owner that released it while we looked";
  if ("unreadable" in owner) return `an unknown owner (lock content unreadable: ${owner.unreadable})`;
  let liveness = "";
  if (owner.host === hostname()) {
    const alive = processAlive(owner.pid);
    liveness =
      alive === false
        ? "; that process is no longer running on this host"
        : alive
          ? "; that process is still running"
          : "";
  }
  return (
    `pid ${owner.pid} on ${owner.host} since ${owner.acquiredAt} ` +
    `(generation ${owner.generation}${owner.purpose ? `, ${owner.purpose}` : ""}${liveness})`
  );
}

/** Whether no process with this pid runs on this host now (false when it runs or cannot be asked). */
export function pidIsGone(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 0 && processAlive(pid) === false;
}

/** Whether the recorded owner is a process of this host that no longer runs (its publication was interrupted). */
export function ownerIsGone(owner: LockOwner | { unreadable: string } | null): boolean {
  return owner !== null && !("unreadable" in owner) && owner.host === hostname() && processAlive(owner.pid) === false;
}

export function lockHeldError(path: string, owner: LockOwner | { unreadable: string } | null): StoreError {
  const remedy = ownerIsGone(owner)
    ? `Its publication was interrupted. Remove ${path} and retry: the next State Flow read or publication finishes ` +
      `or discards the interrupted cohort from what it left on disk (its journal), so the store holds exactly ` +
      `the old or the new cohort.`
    : `Let that publisher finish, or reconcile its interrupted work (check the store's files and, for Git, HEAD ` +
      `and the index); if the owner is gone, remove ${path} and retry.`;
  return new StoreError(
    "lock-held",
    `The State Flow publication lock ${path} is held by ${describeOwner(owner)}. Nothing was written. ${remedy} ` +
      `The lock is never taken over automatically.`,
    { file: path },
  );
}

/**
 * Reads that kept overlapping other writers' publications (each finished between two reads, so the
 * lock was free whenever it was checked). Retryable like lock-held, and said as what it is.
 */
export function publicationsOverlapError(path: string, reads: number): StoreError {
  return new StoreError(
    "lock-held",
    `Other State Flow writers kept publishing while this read ran: ${reads} reads in a row each overlapped ` +
      `a publication (lock ${path}). Nothing was read as current and nothing was written; retry in a moment.`,
    { file: path },
  );
}

/** Re-reads of the live cohort before reads that keep overlapping publications count as lock-held. */
export const STABLE_READ_ATTEMPTS = 8;

/**
 * Reads the live cohort until a read can be trusted while other writers may be publishing: a
 * publisher renames its files one by one, so a read that overlaps it can mix two cohorts. `settle`
 * gets each read and the one before it (null for the first) and returns the result, or undefined
 * to read again (the two reads disagree: a publication completed between them). Reads that keep
 * overlapping end as the retryable `publicationsOverlapError`.
 */
export async function readUntilSettled<R, T>(
  lockPath: string,
  read: () => Promise<R>,
  settle: (read: R, previous: R | null) => Promise<T | undefined> | T | undefined,
  pauseMs: (attempt: number) => number = () => 0,
): Promise<T> {
  let previous: R | null = null;
  for (let attempt = 0; ; attempt++) {
    const current = await read();
    const settled = await settle(current, previous);
    if (settled !== undefined) return settled;
    if (attempt >= STABLE_READ_ATTEMPTS) throw publicationsOverlapError(lockPath, attempt);
    previous = current;
    const pause = pauseMs(attempt + 1);
    if (pause > 0) await new Promise((done) => setTimeout(done, pause));
  }
}

/**
 * Takes the lock by exclusive create; throws `lock-held` when it exists. The lock file is created,
 * written and removed with synchronous calls: each is a fraction of a thread-pool round trip, and a
 * publication takes and releases the lock every time.
 */
export async function acquirePublicationLock(
  path: string,
  options: { generation: string; purpose?: string },
): Promise<HeldLock> {
  const owner: LockOwner = {
    pid: process.pid,
    host: hostname(),
    acquiredAt: new Date().toISOString(),
    generation: options.generation,
    token: randomBytes(12).toString("hex"),
    purpose: options.purpose ?? "publication",
  };
  let fd: number;
  try {
    fd = openSync(
      path,
      fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW,
      0o600,
    );
  } catch (error) {
    const code = errnoOf(error);
    if (code === "EEXIST" || code === "ELOOP") throw lockHeldError(path, await readLockOwner(path));
    throw new StoreError(
      "io-failed",
      `Cannot create the publication lock ${path}: ${String(error)}. Nothing was written.`,
      {
        file: path,
        cause: error,
      },
    );
  }
  try {
    // No fsync: the lock must outlive a killed process (the page cache does), not a power loss
    // (after which no publisher of this boot can still be running).
    writeFileSync(fd, `${JSON.stringify(owner)}\n`);
  } catch (error) {
    closeSync(fd);
    unlinkQuietlySync(path); // never created as far as anyone can see
    throw new StoreError(
      "io-failed",
      `Cannot write the publication lock ${path}: ${String(error)}. Nothing was written.`,
      {
        file: path,
        cause: error,
      },
    );
  }
  closeSync(fd);
  killPoint("lock.acquired");
  let released = false;
  return {
    path,
    owner,
    async release() {
      if (released) return;
      const current = readLockOwnerSync(path);
      if (current === null || "unreadable" in current || current.token !== owner.token) {
        released = true;
        throw new StoreError(
          "lock-lost",
          `The publication lock ${path} was removed or replaced while this publisher held it ` +
            `(now: ${describeOwner(current)}). Another process ignored the lock protocol; ` +
            `reconcile the store before publishing again.`,
          { file: path },
        );
      }
      unlinkSync(path);
      released = true;
      killPoint("lock.released");
    },
  };
}

/** Runs `fn` under the lock; the lock is released afterwards, also when `fn` throws. */
export async function withPublicationLock<T>(
  path: string,
  options: { generation: string; purpose?: string },
  fn: (lock: HeldLock) => Promise<T>,
): Promise<T> {
  const lock = await acquirePublicationLock(path, options);
  let result: T;
  try {
    result = await fn(lock);
  } catch (error) {
    await lock.release().catch(() => undefined);
    throw error;
  }
  await lock.release();
  return result;
}

/** True when a lock file (or anything else) exists at `path`. */
export async function lockExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return false;
    throw error;
  }
}
