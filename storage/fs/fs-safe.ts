// Byte-exact, fail-closed file primitives for the state store.
//
// Rules: every store path is a plain relative POSIX path below the store root; no component
// below the root may be a symbolic link; files must be regular files; reads return raw Buffers
// and distinguish absent (null) from present; writes are same-directory temp + fsync + rename
// + directory fsync. These helpers require caller exclusion (the publication lock): they are
// not a multi-file compare-and-swap against writers that ignore the protocol.

import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  fsync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
export { sha256Hex } from "../core/json.ts";
import { killPoint } from "./crash-points.ts";
import { StoreError, errnoOf } from "../store-error.ts";

/** State can hold private session content: what State Flow creates is its owner's alone. */
export const PRIVATE_DIR_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;

/** Validates a store-relative path (`a/b/c.json`): POSIX separators, no empty, `.`, `..`, `.git` or NUL components. */
export function assertStorePath(rel: string): string[] {
  const segments = rel.split("/");
  const bad =
    rel.length === 0 ||
    rel.includes("\\") ||
    rel.includes("\0") ||
    segments.some((s) => s === "" || s === "." || s === ".." || s.toLowerCase() === ".git");
  if (bad) {
    throw new StoreError(
      "invalid-key",
      `Store path ${JSON.stringify(rel)} is not a plain relative path below the store root ` +
        `(POSIX "/" separators; no empty, ".", "..", ".git" or NUL components). ` +
        `Use the layout helpers to build store paths.`,
      { file: rel },
    );
  }
  return segments;
}

function ioError(file: string, action: string, error: unknown): StoreError {
  return new StoreError(
    "io-failed",
    `Cannot ${action} ${file}: ${error instanceof Error ? error.message : String(error)}. ` +
      `Check permissions and free space on the state store; nothing was overwritten.`,
    { file, cause: error },
  );
}

function symlinkRefused(abs: string): StoreError {
  return new StoreError(
    "symlink-refused",
    `${abs} is a symbolic link. State Flow only reads and writes regular, non-symlink files it owns ` +
      `inside the state store; replace the link with the real file or directory (or remove it) and retry.`,
    { file: abs },
  );
}

function notRegular(abs: string, expected: "file" | "directory"): StoreError {
  return new StoreError(
    "not-regular-file",
    `${abs} exists but is not a regular ${expected}. State Flow refuses to read or replace it; ` +
      `move it out of the state store and retry.`,
    { file: abs },
  );
}

/**
 * Checks the directory components between root (exclusive) and a file about to be written,
 * creating the missing ones owner-only; refuses symlinks and non-directories among them.
 */
function checkParentsSync(root: string, segments: readonly string[]): void {
  const rootStat = syncCall(root, "inspect", () => statSync(root, { throwIfNoEntry: false }));
  if (rootStat === undefined)
    syncCall(root, "create the state directory", () => mkdirSync(root, { recursive: true, mode: PRIVATE_DIR_MODE }));
  else if (!rootStat.isDirectory()) throw notRegular(root, "directory");
  let current = root;
  for (const segment of segments.slice(0, -1)) {
    current = join(current, segment);
    let st = lstatSyncOrUndefined(current);
    if (st === undefined) {
      try {
        mkdirSync(current, { mode: PRIVATE_DIR_MODE });
        continue;
      } catch (error) {
        if (errnoOf(error) !== "EEXIST") throw ioError(current, "create directory", error);
        st = lstatSyncOrUndefined(current);
      }
    }
    if (st?.isSymbolicLink()) throw symlinkRefused(current);
    if (!st?.isDirectory()) throw notRegular(current, "directory");
  }
}

/**
 * Whether a store directory exists: it and every directory above it up to the root are checked
 * (each once per `checked`). The root may be a symlink; nothing below it may be.
 */
function ownedDirectoryExists(root: string, dir: string, checked: Map<string, boolean>): boolean {
  const known = checked.get(dir);
  if (known !== undefined) return known;
  let exists: boolean;
  if (dir === root) {
    const st = syncCall(root, "inspect", () => statSync(root, { throwIfNoEntry: false }));
    if (st !== undefined && !st.isDirectory()) throw notRegular(root, "directory");
    exists = st !== undefined;
  } else {
    exists = ownedDirectoryExists(root, dirname(dir), checked);
    const st = exists ? lstatSyncOrUndefined(dir) : undefined;
    if (st?.isSymbolicLink()) throw symlinkRefused(dir);
    if (st !== undefined && !st.isDirectory()) throw notRegular(dir, "directory");
    exists &&= st !== undefined;
  }
  checked.set(dir, exists);
  return exists;
}

/**
 * The absolute path of an existing store file; null when it or a directory above it is absent.
 * Refuses symlinks and non-regular files. `root` must be resolved (every directory chain ends at it).
 */
function existingOwnedFile(root: string, rel: string, checked = new Map<string, boolean>()): string | null {
  const abs = join(root, ...assertStorePath(rel));
  if (!ownedDirectoryExists(root, dirname(abs), checked)) return null;
  const st = lstatSyncOrUndefined(abs);
  if (st === undefined) return null;
  if (st.isSymbolicLink()) throw symlinkRefused(abs);
  if (!st.isFile()) throw notRegular(abs, "file");
  return abs;
}

/** What a failed open of a store file means: it vanished (null), it is a symlink, or an I/O failure. */
function absentOrRefused(abs: string, error: unknown): null {
  const code = errnoOf(error);
  if (code === "ENOENT") return null;
  if (code === "ELOOP") throw symlinkRefused(abs);
  throw ioError(abs, "open", error);
}

/** Reads a store file as raw bytes; null when absent. Refuses symlinks and non-regular files anywhere below root. */
export async function readOwnedFile(root: string, rel: string): Promise<Buffer | null> {
  return readOwnedFilesSync(root, [rel]).get(rel) ?? null;
}

/**
 * Reads several store files at once, synchronously, with readOwnedFile's checks (each directory
 * checked once): null for an absent file. A cohort is a handful of small files, and reading them
 * this way takes less than the thread-pool round trips of the asynchronous calls would (about
 * eight per file); nothing else in this process can interleave with the read.
 */
export function readOwnedFilesSync(store: string, rels: readonly string[]): Map<string, Buffer | null> {
  const root = resolve(store); // every file's directory chain ends exactly at it
  const checked = new Map<string, boolean>();
  const files = new Map<string, Buffer | null>();
  for (const rel of rels) {
    const abs = existingOwnedFile(root, rel, checked);
    files.set(rel, abs === null ? null : readRegularFileSync(abs));
  }
  return files;
}

/** Writes every byte (writeSync may write fewer than asked). */
export function writeAllSync(fd: number, bytes: Uint8Array): void {
  for (let offset = 0; offset < bytes.length;) offset += writeSync(fd, bytes, offset, bytes.length - offset);
}

function syncCall<T>(file: string, action: string, call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw ioError(file, action, error);
  }
}

function lstatSyncOrUndefined(abs: string) {
  try {
    return lstatSync(abs, { throwIfNoEntry: false });
  } catch (error) {
    if (errnoOf(error) === "ENOTDIR") return undefined;
    throw ioError(abs, "inspect", error);
  }
}

/** The bytes of a file existingOwnedFile found; null when it vanished since. */
function readRegularFileSync(abs: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(abs, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (error) {
    return absentOrRefused(abs, error);
  }
  try {
    if (!syncCall(abs, "read", () => fstatSync(fd)).isFile()) throw notRegular(abs, "file");
    return syncCall(abs, "read", () => readFileSync(fd));
  } finally {
    closeSync(fd);
  }
}

/** Removes a file if it is there; one already gone, or that cannot be removed, is left to the caller's next check. */
export function unlinkQuietlySync(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/**
 * fsync of an open descriptor on the thread pool. The other calls around it (open, write, close,
 * rename) are synchronous in the store's write paths: each costs less than a thread-pool round
 * trip, while an fsync takes about a millisecond and must not block the event loop.
 */
export function fsyncDescriptor(fd: number): Promise<void> {
  return new Promise((done, fail) => fsync(fd, (error) => (error ? fail(error) : done())));
}

export async function fsyncDirectory(dir: string): Promise<void> {
  let fd: number | undefined;
  try {
    fd = openSync(dir, fsConstants.O_RDONLY);
    await fsyncDescriptor(fd);
  } catch (error) {
    // Some filesystems refuse fsync on directories (EINVAL/EISDIR); durability then rests on the file fsync.
    const code = errnoOf(error);
    if (code !== "EINVAL" && code !== "EISDIR" && code !== "EPERM") throw ioError(dir, "sync directory", error);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Atomically replaces (or creates) one store file with exactly `bytes`: same-directory temp file
 * (exclusive create) → write → fsync → rename → directory fsync. Refuses when the target or any
 * directory below root is a symlink or not regular. (One entry of writeOwnedFilesAtomic.)
 */
export async function writeOwnedFileAtomic(root: string, rel: string, bytes: Uint8Array): Promise<void> {
  await writeOwnedFilesAtomic(root, [[rel, bytes]]);
}

/**
 * Matches every temp file prepareOwnedFilesAtomic creates (`.<name>.sf-<pid>-<hex>.tmp`), as a
 * Git pathspec glob: the Git backend keeps them out of `git add -A`, which runs while they are
 * being written, and out of history if a crashed publisher left one behind.
 */
export const STORE_TEMP_GLOB = "**/.*.sf-*.tmp";

/** Temp files written and fsynced next to their targets, not yet renamed into place. */
export interface PreparedWrites {
  /** Absolute temp path per entry, in the given order (what a publication journal records). */
  readonly temps: readonly string[];
  /** Renames every temp file over its target in the given order, then fsyncs each distinct directory once. */
  commit(): Promise<void>;
  /** Removes the temp files (nothing was replaced). Safe to call after a failed commit. */
  abort(): Promise<void>;
}

/**
 * First half of an atomic multi-file replacement: for every entry a same-directory temp file
 * (exclusive create, owner-only) is written and fsynced, in parallel. Nothing visible
 * changes until `commit()`. Refuses when a target or any directory below root is a symlink or
 * not regular; on any failure the temp files already created are removed.
 */
export async function prepareOwnedFilesAtomic(
  root: string,
  entries: ReadonlyArray<readonly [string, Uint8Array]>,
): Promise<PreparedWrites> {
  const prepared: Array<{ abs: string; temp: string }> = [];
  const abort = async () => {
    await Promise.all(prepared.map((item) => (item?.temp ? unlink(item.temp).catch(() => undefined) : undefined)));
  };
  const results = await Promise.allSettled(
    entries.map(async ([rel, bytes], index) => {
      const segments = assertStorePath(rel);
      checkParentsSync(root, segments);
      const abs = join(root, ...segments);
      const existing = lstatSyncOrUndefined(abs);
      if (existing?.isSymbolicLink()) throw symlinkRefused(abs);
      if (existing && !existing.isFile()) throw notRegular(abs, "file");
      const temp = join(dirname(abs), `.${basename(abs)}.sf-${process.pid}-${randomBytes(6).toString("hex")}.tmp`);
      const fd = syncCall(temp, "create temporary file", () =>
        openSync(
          temp,
          fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW,
          PRIVATE_FILE_MODE,
        ),
      );
      prepared[index] = { abs, temp };
      try {
        writeAllSync(fd, bytes);
        killPoint("temp.written");
        await fsyncDescriptor(fd);
        killPoint("temp.synced");
      } catch (error) {
        throw ioError(abs, "write", error);
      } finally {
        closeSync(fd);
      }
    }),
  );
  const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
  if (failed) {
    await abort();
    throw failed.reason;
  }
  return {
    temps: prepared.map((item) => item.temp),
    abort,
    async commit() {
      for (let index = 0; index < entries.length; index++) {
        const item = prepared[index]!;
        try {
          renameSync(item.temp, item.abs);
        } catch (error) {
          await abort();
          throw ioError(item.abs, "replace", error);
        }
        prepared[index] = { abs: item.abs, temp: "" };
        killPoint("rename");
      }
      await Promise.all([...new Set(prepared.map((item) => dirname(item.abs)))].map((dir) => fsyncDirectory(dir)));
      killPoint("dirs.synced");
    },
  };
}

/**
 * Atomically replaces several store files: every temp file is written and fsynced (in parallel),
 * then renamed in the given order, then each distinct directory is fsynced once. On a failure
 * before the renames nothing is replaced; a failure during the renames leaves a prefix of the
 * order replaced (callers roll back from their verified basis or keep their lock).
 */
export async function writeOwnedFilesAtomic(
  root: string,
  entries: ReadonlyArray<readonly [string, Uint8Array]>,
): Promise<void> {
  await (await prepareOwnedFilesAtomic(root, entries)).commit();
}

/** Removes a store file; false when it was already absent. Refuses symlinks and non-regular files. */
export async function removeOwnedFile(root: string, rel: string): Promise<boolean> {
  const abs = existingOwnedFile(resolve(root), rel);
  if (abs === null) return false;
  try {
    await unlink(abs);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return false;
    throw ioError(abs, "remove", error);
  }
  await fsyncDirectory(dirname(abs));
  return true;
}
