// git's index.lock as a publication holds it (see git-publication.ts): from just before its journal
// until its new index is installed, so no git command stages or commits from the old index while
// the ref already names the new commit. The lock holds a stamp (pid, host, token) that proves it
// is State Flow's, so a lock a dead State Flow process left can be removed and anyone else's is
// waited for briefly and then refused by name.

import { closeSync, constants as fsConstants, openSync, readFileSync, writeFileSync } from "node:fs";
import { readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { killPoint } from "../fs/crash-points.ts";
import { unlinkQuietlySync } from "../fs/fs-safe.ts";
import { pidIsGone } from "../fs/lock.ts";
import { StoreError, errnoOf } from "../store-error.ts";
import { gitFailed } from "./git-runner.ts";

/**
 * How long a publication waits for someone else's index.lock: git commands hold it for
 * milliseconds, except `git commit` while its editor is open (then the publication is refused).
 */
export const INDEX_LOCK_WAIT_MS = 1000;
export const INDEX_LOCK_STAMP = /^state-flow index\.lock pid=(\d+) host=(\S+) token=[0-9a-f]+\n$/;

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** What index.lock holds while a State Flow publication holds it: who, and a token. */
export function indexLockStamp(): string {
  return `state-flow index.lock pid=${process.pid} host=${hostname()} token=${randomBytes(8).toString("hex")}\n`;
}

/** Who holds index.lock: stale when a State Flow process of this host stamped it and no longer runs. */
export async function readIndexLockHolder(lockPath: string): Promise<{ stale: boolean; description: string }> {
  return indexLockHolder(await readFile(lockPath, "latin1").catch(() => null));
}

/** readIndexLockHolder with one synchronous read (a lock that is usually absent: one failed open). */
export function readIndexLockHolderSync(lockPath: string): { stale: boolean; description: string } {
  let text: string | null;
  try {
    text = readFileSync(lockPath, "latin1");
  } catch {
    text = null;
  }
  return indexLockHolder(text);
}

function indexLockHolder(text: string | null): { stale: boolean; description: string } {
  const stamp = text === null ? null : INDEX_LOCK_STAMP.exec(text);
  if (!stamp) return { stale: false, description: "another git process" };
  const pid = Number(stamp[1]);
  const here = stamp[2] === hostname();
  const stale = here && (pid === process.pid || pidIsGone(pid));
  return { stale, description: `State Flow pid ${pid} on ${stamp[2]}` };
}

export function indexLockedError(root: string, lockPath: string, holder: string): StoreError {
  return new StoreError(
    "index-locked",
    `Git's index lock ${lockPath} is held by ${holder} (for example a git commit waiting for its editor, or ` +
      `a git command that was killed). State Flow waited ${INDEX_LOCK_WAIT_MS} ms and published nothing: ` +
      `committing now would leave that command's index behind the new commit, so its next commit would ` +
      `revert this cohort. Finish or abort that git command, then retry. If no git process is running in ` +
      `${root}, remove ${lockPath} and retry.`,
    { file: lockPath },
  );
}

/** Whether `bytes` start like a git index file ("DIRC"). */
export function isIndexFile(bytes: Buffer): boolean {
  return bytes.length >= 4 && bytes.readUInt32BE(0) === 0x44495243;
}

/**
 * Creates index.lock (O_EXCL) holding `stamp`. A lock a State Flow process of this host left
 * when it died is removed; any other is waited for briefly, then refused (`index-locked`):
 * committing past it would leave that command's index behind the new commit.
 */
export async function createIndexLock(root: string, lockPath: string, stamp: string): Promise<void> {
  // Synchronous calls, as for the other small files of a publication; only the wait between retries yields.
  const deadline = performance.now() + INDEX_LOCK_WAIT_MS;
  let delay = 1;
  for (;;) {
    let fd: number | undefined;
    try {
      fd = openSync(lockPath, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o644);
    } catch (error) {
      if (errnoOf(error) !== "EEXIST") throw gitFailed(`Creating ${lockPath}`, error, lockPath);
    }
    if (fd !== undefined) {
      try {
        writeFileSync(fd, stamp);
      } catch (error) {
        try {
          closeSync(fd);
        } catch {
          // the write's error is the one to report; the lock goes either way
        }
        unlinkQuietlySync(lockPath);
        throw gitFailed(`Writing ${lockPath}`, error, lockPath);
      }
      closeSync(fd);
      return;
    }
    const holder = readIndexLockHolderSync(lockPath);
    if (holder.stale) {
      unlinkQuietlySync(lockPath);
      continue;
    }
    if (performance.now() >= deadline) throw indexLockedError(root, lockPath, holder.description);
    await sleep(delay);
    delay = Math.min(delay * 2, 50);
  }
}

/** Removes git's index.lock when it still holds `stamp` (this publication's own lock). */
export async function releaseIndexLock(lockPath: string, stamp: string | undefined): Promise<void> {
  if (stamp === undefined) return;
  if ((await readFile(lockPath, "latin1").catch(() => null)) === stamp) await unlink(lockPath);
}

/**
 * Installs `index` as the caller's index through the index.lock a publication holds: renamed over
 * the lock, then the lock into place (git's commit_lock_file).
 */
export async function installIndex(gitDir: string, index: string): Promise<void> {
  const lockPath = join(gitDir, "index.lock");
  await rename(index, lockPath);
  killPoint("index.locked");
  await rename(lockPath, join(gitDir, "index"));
  killPoint("index.installed");
}

/** A fresh name for an isolated index beside the caller's (leftovers.ts removes one its dead owner left). */
export function isolatedIndexPath(gitDir: string): string {
  return join(gitDir, `state-flow-index.${process.pid}.${randomBytes(6).toString("hex")}`);
}
