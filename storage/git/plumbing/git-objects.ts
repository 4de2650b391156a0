// Git objects written in-process, byte-identical to what git itself writes, for the publication
// hot path (see git-publication.ts). Why hand-written code instead of `git commit-tree`: every git
// process costs ≥ 2.6 ms just to spawn (4–10 ms measured per process in `npm run bench:store`
// on the 2-core bench machine; commit-tree alone 3.9–6.5 ms median), while building, hashing,
// deflating and renaming one small commit object in-process costs ≈ 0.1–0.3 ms. The format is
// git's (commit.c commit_tree_extended, builtin/commit-tree.c) and the tests compare every byte
// with `git commit-tree` and run `git fsck --strict`.
//
// Scope, deliberately narrow (the caller keeps the git process path for everything else):
// sha1 repositories only; UTF-8 messages without NUL; no signature; no encoding header.
// Identity is never invented here: the caller passes git's own `git var` output.

import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  constants as fsConstants,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  utimesSync,
  writeSync,
  type PathLike,
} from "node:fs";
import { mkdir, open, rename, unlink, utimes, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { unlinkQuietlySync } from "../../fs/fs-safe.ts";
import { errnoOf } from "../../store-error.ts";

export type GitObjectType = "blob" | "tree" | "commit";

/** The all-zero object id of an object format (git's "no object", as in `update-index` deletions). */
export function zeroObjectId(objectFormat: "sha1" | "sha256"): string {
  return "0".repeat(objectFormat === "sha256" ? 64 : 40);
}

/** Git object id of `<type> <size>\0<body>` (sha1 or sha256 object format). */
export function gitObjectId(type: GitObjectType, body: Uint8Array, objectFormat: "sha1" | "sha256" = "sha1"): string {
  return createHash(objectFormat).update(`${type} ${body.length}\0`).update(body).digest("hex");
}

/**
 * How often a temp object file is retried when its fan-out directory vanished between mkdir and
 * open: `git prune` and `git prune-packed` (run by `gc --auto`) remove every empty fan-out
 * directory, so a freshly created one can be gone again (git's odb retries the same way).
 */
const VANISHED_DIR_RETRIES = 16;

const OBJECT_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL;

async function openObjectTemp(dir: string, temp: string): Promise<FileHandle> {
  for (let attempt = 1; ; attempt++) {
    try {
      await mkdir(dir, { recursive: true }); // ENOENT too when the directory vanishes while it checks it
      return await open(temp, OBJECT_FLAGS, 0o444);
    } catch (error) {
      if (errnoOf(error) !== "ENOENT" || attempt >= VANISHED_DIR_RETRIES) throw error;
    }
  }
}

function openObjectTempSync(dir: string, temp: string): number {
  for (let attempt = 1; ; attempt++) {
    try {
      mkdirSync(dir, { recursive: true });
      return openSync(temp, OBJECT_FLAGS, 0o444);
    } catch (error) {
      if (errnoOf(error) !== "ENOENT" || attempt >= VANISHED_DIR_RETRIES) throw error;
    }
  }
}

/**
 * Whether the loose object exists, refreshing its mtime as git's freshen_loose_object does: a
 * concurrent `git prune --expire=<date>` keeps recent unreachable objects only, and the commit
 * that will reach this one is not written yet. Any failure means "write it" (as in git).
 */
async function freshen(path: PathLike): Promise<boolean> {
  const now = new Date();
  return utimes(path, now, now).then(
    () => true,
    () => false,
  );
}

function freshenSync(path: PathLike): boolean {
  const now = new Date();
  try {
    utimesSync(path, now, now);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes a loose sha1 object exactly as git would (zlib of "<type> <n>\0" + body, level 1 like
 * git's default core.looseCompression, mode 0444, temp file + rename in the fan-out directory)
 * unless it already exists (then its mtime is refreshed, as git does). `fsync` follows the
 * repository's core.fsync settings (git's default does not fsync loose objects).
 */
export async function writeLooseObject(
  objectsDir: string,
  type: GitObjectType,
  body: Uint8Array,
  options: { fsync?: boolean } = {},
): Promise<string> {
  const id = gitObjectId(type, body, "sha1");
  const dir = join(objectsDir, id.slice(0, 2));
  const target = join(dir, id.slice(2));
  if (await freshen(target)) return id; // content-addressed: an existing object has these bytes
  const temp = join(dir, `tmp_obj_${process.pid}_${randomBytes(6).toString("hex")}`);
  const handle = await openObjectTemp(dir, temp);
  try {
    try {
      await handle.writeFile(deflateSync(Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]), { level: 1 }));
      if (options.fsync) await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  return id;
}

/**
 * writeLooseObject for one small object (a commit or a tree) with synchronous system calls:
 * ≈ 0.1 ms instead of ≈ 1.3 ms of thread-pool round trips measured for the async version on the
 * bench machine (where the live files' fsyncs occupy the pool meanwhile). Only for small objects
 * (a commit; a tree of a store directory, tens of KiB at most): it blocks the event loop while it writes.
 */
export function writeSmallLooseObjectSync(
  objectsDir: string,
  type: GitObjectType,
  body: Uint8Array,
  options: { fsync?: boolean } = {},
): string {
  const id = gitObjectId(type, body, "sha1");
  const dir = join(objectsDir, id.slice(0, 2));
  const target = join(dir, id.slice(2));
  if (freshenSync(target)) return id;
  const temp = join(dir, `tmp_obj_${process.pid}_${randomBytes(6).toString("hex")}`);
  const fd = openObjectTempSync(dir, temp);
  try {
    try {
      writeSync(fd, deflateSync(Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]), { level: 1 }));
      if (options.fsync) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
  } catch (error) {
    unlinkQuietlySync(temp);
    throw error;
  }
  return id;
}

/** Git's timezone field (`+hhmm`/`-hhmm`) for an offset east of UTC in minutes (date.c local_tzoffset). */
export function formatGitTimezone(offsetMinutes: number): string {
  const minutes = Math.trunc(offsetMinutes);
  const sign = minutes < 0 ? "-" : "+";
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}${String(abs % 60).padStart(2, "0")}`;
}

/** `<unix seconds> <tz>` for an instant in this process's local timezone, as git's datestamp() prints it. */
export function gitDateOf(epochMs: number): string {
  const seconds = Math.floor(epochMs / 1000);
  return `${seconds} ${formatGitTimezone(-new Date(seconds * 1000).getTimezoneOffset())}`;
}

/** Splits `git var GIT_*_IDENT` output (`Name <email> <seconds> <tz>`) into person and date; null if malformed. */
export function parseGitIdent(line: string): { person: string; date: string; seconds: number } | null {
  const match = /^([^<>\n]*<[^<>\n]*>) (-?\d+) ([+-]\d{4})$/.exec(line.replace(/\n$/, ""));
  if (!match?.[1] || !match[2] || !match[3]) return null;
  return { person: match[1], date: `${match[2]} ${match[3]}`, seconds: Number(match[2]) };
}

/** The message bytes `git commit-tree -m <message>` stores: the text, completed with a final newline if non-empty. */
function commitTreeMessage(message: string): string {
  return message.length > 0 && !message.endsWith("\n") ? `${message}\n` : message;
}

/** True when `git commit-tree -m` would store `message` byte-for-byte as UTF-8 (no NUL, no lone surrogate). */
export function isPlainCommitMessage(message: string): boolean {
  return !message.includes("\0") && Buffer.from(message, "utf8").toString("utf8") === message;
}

/** The body of a commit object exactly as `git commit-tree <tree> [-p <parent>] -m <message>` builds it. */
export function commitObjectBody(options: {
  tree: string;
  parents: readonly string[];
  author: string;
  committer: string;
  message: string;
}): Buffer {
  let head = `tree ${options.tree}\n`;
  for (const parent of options.parents) head += `parent ${parent}\n`;
  head += `author ${options.author}\ncommitter ${options.committer}\n\n`;
  return Buffer.from(head + commitTreeMessage(options.message), "utf8");
}
