// Compare-and-swap of a branch ref in-process, through git's own lockfile protocol (files ref
// backend, refs/files-backend.c), for the publication hot path (see git-publication.ts). Why
// hand-written code instead of `git update-ref <ref> <new> <old>`: the process cost 5.4–6.2 ms
// median per cohort in `npm run bench:store` (spawn alone ≥ 2.6 ms) against ≈ 0.5 ms here plus
// one fsync; what git does for this one update is small and fully specified:
//
//   1. lock `<ref>.lock` (O_EXCL; retried for core.filesRefLockTimeout, default 100 ms, like
//      git; a lock still held then is a named `lock-held` error, never waited on forever, never
//      stolen), and — because HEAD points to the branch — `HEAD.lock` (git's split_head_update);
//   2. read the current value under the lock: the loose ref, else packed-refs; compare it with
//      the expected old value (null = the ref must not exist) — a mismatch is `stale-basis`;
//   3. write `<new>\n` into the lock, fsync, close;
//   4. append `<old> <new> <committer ident>\t<message>\n` to logs/<ref> and logs/HEAD when the
//      log exists or core.logAllRefUpdates creates it (git's should_autocreate_reflog);
//   5. rename the lock over the ref; remove HEAD.lock.
// Every failure removes the locks this call created (and only those).
//
// The caller uses this only where it is exact: the files backend (no extensions.refStorage),
// no reference-transaction hook, no core.sharedRepository, a plain refs/heads/ name.

import { closeSync, constants as fsConstants, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { fsyncDescriptor, unlinkQuietlySync, writeAllSync } from "../../fs/fs-safe.ts";
import { dirname, join } from "node:path";
import { killPoint } from "../../fs/crash-points.ts";
import { StoreError, errnoOf } from "../../store-error.ts";

export type LogAllRefUpdates = "none" | "normal" | "always";

export interface RefCasOptions {
  readonly gitDir: string;
  readonly commonDir: string;
  /** `refs/heads/<branch>` (checked with isPlainBranchRef). */
  readonly ref: string;
  readonly newId: string;
  /** Expected current value; null = the ref must not exist (unborn branch). */
  readonly oldId: string | null;
  /** The all-zero id of the object format (sha1: 40 zeros). */
  readonly zeroId: string;
  /** `Name <email> <seconds> <tz>` of the committer, as git would log it. */
  readonly committer: string;
  /** Reflog message (single line). */
  readonly message: string;
  readonly logAllRefUpdates: LogAllRefUpdates;
  /** Whether HEAD is a symbolic ref to `ref` (then HEAD is locked and its reflog appended, as git does). */
  readonly headPointsHere: boolean;
  /** core.filesRefLockTimeout in ms (git's default 100). */
  readonly lockTimeoutMs?: number;
}

/** A `refs/heads/` name that passes git's check_refname_format and maps to a plain path. */
export function isPlainBranchRef(ref: string): boolean {
  if (!ref.startsWith("refs/heads/") || ref.length === "refs/heads/".length) return false;
  for (const component of ref.split("/")) {
    if (component === "" || component.startsWith(".") || component.endsWith(".lock") || component.endsWith("."))
      return false;
  }
  return !/[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{/.test(ref) && ref !== "refs/heads/@";
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * Creates git's lock file and returns its descriptor. Synchronous calls (as for the other small
 * files of a publication: cheaper than thread-pool round trips); only the wait between retries
 * yields.
 */
async function createLock(path: string, timeoutMs: number, what: string): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  let delay = 1;
  for (;;) {
    try {
      return openSync(path, fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o666);
    } catch (error) {
      const code = errnoOf(error);
      if (code === "ENOENT") {
        try {
          mkdirSync(dirname(path), { recursive: true });
        } catch (mkdirError) {
          throw refFailed(`Creating the directory of ${path}`, mkdirError, path);
        }
        continue;
      }
      if (code !== "EEXIST") throw refFailed(`Creating the lock ${path}`, error, path);
      if (performance.now() >= deadline) {
        throw new StoreError(
          "lock-held",
          `Git's lock ${path} exists: another git process is updating ${what} of the state repository ` +
            `(or one was killed). ` +
            `State Flow waited ${timeoutMs} ms like git, does not steal it, and published nothing. ` +
            `If no git process is running in ${dirname(path)}, remove ${path} and retry.`,
          { file: path },
        );
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 20);
    }
  }
}

const closeQuietly = (fd: number) => {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
};

function refFailed(what: string, error: unknown, file: string): StoreError {
  return new StoreError(
    "git-failed",
    `${what} failed: ${error instanceof Error ? error.message : String(error)}. ` +
      `Nothing was published; fix the repository (permissions, free space) and retry.`,
    { file, cause: error },
  );
}

/** Current value of a ref read from the files backend (loose ref, else packed-refs); null = absent. */
export async function readRefValue(commonDir: string, ref: string, zeroId: string): Promise<string | null> {
  const shaPattern = new RegExp(`^[0-9a-f]{${zeroId.length}}$`);
  const loosePath = join(commonDir, ref);
  try {
    const loose = readFileSync(loosePath, "utf8");
    const value = loose.endsWith("\n") ? loose.slice(0, -1) : loose;
    if (shaPattern.test(value)) return value;
    throw new StoreError(
      "git-failed",
      `The ref file ${loosePath} holds ${JSON.stringify(loose.slice(0, 100))}, not an object id; ` +
        `State Flow does not update it. Inspect it with git -C ${dirname(commonDir)} show-ref.`,
      {
        file: loosePath,
      },
    );
  } catch (error) {
    if (error instanceof StoreError) throw error;
    const code = errnoOf(error);
    if (code !== "ENOENT" && code !== "ENOTDIR") throw refFailed(`Reading ${loosePath}`, error, loosePath);
  }
  let packed: string;
  try {
    packed = readFileSync(join(commonDir, "packed-refs"), "utf8");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null;
    throw refFailed(`Reading ${join(commonDir, "packed-refs")}`, error, join(commonDir, "packed-refs"));
  }
  for (const line of packed.split("\n")) {
    if (line.startsWith("#") || line.startsWith("^")) continue;
    const space = line.indexOf(" ");
    if (space > 0 && line.slice(space + 1) === ref) {
      const sha = line.slice(0, space);
      if (!shaPattern.test(sha))
        throw refFailed(
          `Reading ${ref} from packed-refs`,
          new Error(`malformed line ${JSON.stringify(line)}`),
          join(commonDir, "packed-refs"),
        );
      return sha;
    }
  }
  return null;
}

async function appendReflog(path: string, create: boolean, line: string): Promise<void> {
  // Synchronous calls, as for the other small files of a publication: cheaper than thread-pool round trips.
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_WRONLY | fsConstants.O_APPEND | (create ? fsConstants.O_CREAT : 0), 0o666);
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOENT" && !create) return; // no log and git would not create one
    if (code === "ENOENT" && create) {
      mkdirSync(dirname(path), { recursive: true });
      return appendReflog(path, create, line);
    }
    throw error;
  }
  try {
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
}

/** git's should_autocreate_reflog for a ref name. */
function autocreatesReflog(mode: LogAllRefUpdates, ref: string): boolean {
  if (mode === "always") return true;
  if (mode === "none") return false;
  return (
    ref === "HEAD" || ref.startsWith("refs/heads/") || ref.startsWith("refs/remotes/") || ref.startsWith("refs/notes/")
  );
}

/** A ref update whose locks are held and whose new value is durable in `<ref>.lock`; nothing visible yet. */
export interface PreparedRefUpdate {
  /** Appends the reflog lines, renames the lock over the ref, releases HEAD.lock. */
  commit(): Promise<void>;
  /** Releases the locks; the ref is unchanged. */
  abort(): Promise<void>;
}

/**
 * Moves `ref` from `oldId` to `newId` exactly as `git update-ref -m <message> <ref> <new> <old>`
 * does with the files backend, in two halves so that the update can overlap other durable work:
 * this call takes the locks, checks the current value and writes + fsyncs the new one into the
 * lock (steps 1–3); the ref moves only on `commit()` (steps 4–5). Throws `stale-basis` when the
 * ref is not at `oldId`, `lock-held` when git's lock stays held, `git-failed` otherwise; the ref
 * is unchanged after any throw, and the locks this call created are already removed.
 */
export async function prepareRefUpdate(options: RefCasOptions): Promise<PreparedRefUpdate> {
  const { commonDir, gitDir, ref, newId, oldId, zeroId } = options;
  if (!isPlainBranchRef(ref))
    throw new StoreError(
      "git-failed",
      `${JSON.stringify(ref)} is not a plain branch ref; State Flow does not update it in-process.`,
      { file: ref },
    );
  const timeout = Math.max(0, Math.min(options.lockTimeoutMs ?? 100, 10_000));
  const refPath = join(commonDir, ref);
  const refLock = `${refPath}.lock`;
  const headLock = join(gitDir, "HEAD.lock");
  const created: string[] = [];
  let renamed = false;
  const release = async () => {
    for (const path of created.splice(0)) if (!(renamed && path === refLock)) unlinkQuietlySync(path);
  };
  let fd: number | undefined;
  try {
    fd = await createLock(refLock, timeout, ref);
    created.push(refLock);
    if (options.headPointsHere) {
      closeSync(await createLock(headLock, timeout, "HEAD"));
      created.push(headLock);
      const head = readFileSync(join(gitDir, "HEAD"), "utf8").trim();
      if (head !== `ref: ${ref}`) {
        throw new StoreError(
          "stale-basis",
          `Stale basis: HEAD of the state repository moved from ${ref} to ${head} while publishing. ` +
            `Nothing was published; reload and retry.`,
          {
            file: join(gitDir, "HEAD"),
          },
        );
      }
    }
    const current = await readRefValue(commonDir, ref, zeroId);
    if (current !== oldId) {
      throw new StoreError(
        "stale-basis",
        `Stale basis: ${ref} of the state repository moved away from ${oldId ?? "(unborn)"} ` +
          `to ${current ?? "(deleted)"} while publishing ` +
          `(compare-and-swap failed). Nothing was published; reload the current view and retry.`,
        { file: ref },
      );
    }
    writeAllSync(fd, Buffer.from(`${newId}\n`));
    await fsyncDescriptor(fd);
    closeSync(fd);
    fd = undefined;
    killPoint("ref.locked");
  } catch (error) {
    if (fd !== undefined) closeQuietly(fd);
    await release();
    if (error instanceof StoreError) throw error;
    throw refFailed(`Moving ${ref} to ${newId}`, error, refPath);
  }
  return {
    abort: release,
    async commit() {
      try {
        const line =
          `${oldId ?? zeroId} ${newId} ${options.committer}` +
          `${options.message ? `\t${options.message.replace(/[ \t\n\r]+/g, " ").trim()}` : ""}\n`;
        await Promise.all([
          appendReflog(join(commonDir, "logs", ref), autocreatesReflog(options.logAllRefUpdates, ref), line),
          options.headPointsHere
            ? appendReflog(join(gitDir, "logs", "HEAD"), autocreatesReflog(options.logAllRefUpdates, "HEAD"), line)
            : undefined,
        ]);
        killPoint("reflog.appended");
        renameSync(refLock, refPath);
        renamed = true;
        killPoint("ref.moved");
      } catch (error) {
        throw refFailed(`Moving ${ref} to ${newId}`, error, refPath);
      } finally {
        await release();
      }
      killPoint("ref.unlocked");
    },
  };
}
