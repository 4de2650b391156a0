// The publication journal: a publisher's intent, made durable after every temp copy of the new
// live files is fsynced and before anything live changes. A publisher killed before the journal
// exists changed nothing live; one killed after it left everything needed to finish: recovery
// (under the publication lock) renames the remaining temp copies over their targets, so every
// member of the cohort switches together — the whole new cohort or, without a journal, the old.
//
// File-only: `<root>/.state-flow-publication.journal`; Git: `<common git dir>/state-flow-publication.journal`
// (never committed). Written once per publication by rename, so it is either absent or complete.

import { closeSync, constants as fsConstants, openSync, readFileSync, renameSync, unlinkSync } from "node:fs";
import { lstat, readFile, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { killPoint } from "./crash-points.ts";
import {
  fsyncDescriptor,
  fsyncDirectory,
  readOwnedFile,
  removeOwnedFile,
  sha256Hex,
  unlinkQuietlySync,
  writeAllSync,
} from "./fs-safe.ts";
import { withPublicationLock } from "./lock.ts";
import { StoreError, errnoOf } from "../store-error.ts";

export const JOURNAL_FILE_NAME = "state-flow-publication.journal";

/** One member the publication replaces (`temp` holds its new bytes) or deletes (`temp` null). */
export interface JournalEntry {
  /** Store-relative path of the live file. */
  readonly path: string;
  /** Absolute path of its fsynced temp copy; null for a deletion. */
  readonly temp: string | null;
  /** sha256 of the live bytes the publication was built on; null = absent. */
  readonly before: string | null;
  /** sha256 of the bytes it publishes; null = deleted. */
  readonly after: string | null;
}

/** What a Git publication moves; recovery finishes only when the ref already holds `revision`. */
export interface JournalGit {
  readonly ref: string;
  readonly base: string | null;
  readonly revision: string;
  /** The isolated index that becomes the caller's index once the ref moved. */
  readonly index: string;
  /** The content of git's index.lock while the publication holds it (taken before this journal). */
  readonly indexLock?: string;
  /** sha1 of the caller's index the isolated index was based on under that lock; null = there was none. */
  readonly indexBasis?: string | null;
}

export interface Journal {
  readonly version: 1;
  readonly pid: number;
  readonly generation: string;
  readonly entries: readonly JournalEntry[];
  readonly git?: JournalGit;
}

/** Writes the journal durably (temp + fsync + rename + directory fsync), owner-only. */
export async function writeJournal(path: string, journal: Journal): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    const fd = openSync(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC, 0o600);
    try {
      writeAllSync(fd, Buffer.from(`${JSON.stringify(journal)}\n`));
      await fsyncDescriptor(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
    await fsyncDirectory(dirname(path));
  } catch (error) {
    unlinkQuietlySync(temp); // not created, or already renamed
    throw new StoreError(
      "io-failed",
      `Cannot write the publication journal ${path}: ${String(error)}. Nothing live was changed.`,
      { file: path, cause: error },
    );
  }
  killPoint("journal.written");
}

export async function removeJournal(path: string): Promise<void> {
  try {
    unlinkSync(path);
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
  }
  await fsyncDirectory(dirname(path));
  killPoint("journal.removed");
}

/**
 * On a read: when a journal shows an interrupted publication, `finish` runs under the publication
 * lock first (a held lock is the named, retryable lock-held error), so no reader sees half a cohort.
 */
export async function finishBeforeReading(
  journalPath: string,
  lockPath: string,
  generation: string,
  finish: () => Promise<void>,
): Promise<void> {
  if (!(await journalExists(journalPath))) return;
  await withPublicationLock(lockPath, { generation, purpose: "recovery of an interrupted publication" }, finish);
}

async function journalExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return false;
    throw new StoreError("io-failed", `Cannot inspect the publication journal ${path}: ${String(error)}.`, {
      file: path,
      cause: error,
    });
  }
}

function unreadable(path: string, detail: string): StoreError {
  return new StoreError(
    "recovery-conflict",
    `The publication journal ${path} is unreadable (${detail}); State Flow only ever writes it whole, so ` +
      `something else changed it. Nothing was changed. Inspect the store's files (and, for Git, git status), ` +
      `then delete ${path} and retry.`,
    { file: path },
  );
}

/** The journal left by an interrupted publication, or null when there is none. */
export async function readJournal(path: string): Promise<Journal | null> {
  let text: string;
  try {
    // Synchronous: every publication looks, and there is almost never a journal to read.
    text = readFileSync(path, "utf8");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null;
    throw unreadable(path, String(error));
  }
  let value: Journal;
  try {
    value = JSON.parse(text) as Journal;
  } catch (error) {
    throw unreadable(path, (error as Error).message);
  }
  const entryOk = (e: JournalEntry) =>
    typeof e?.path === "string" &&
    (e.temp === null || typeof e.temp === "string") &&
    (e.before === null || typeof e.before === "string") &&
    (e.after === null || typeof e.after === "string") &&
    (e.temp === null) === (e.after === null);
  if (value?.version !== 1 || !Array.isArray(value.entries) || !value.entries.every(entryOk)) {
    throw unreadable(path, "unexpected content");
  }
  return value;
}

function conflict(journalPath: string, path: string, found: string | null, entry: JournalEntry): StoreError {
  const short = (hash: string | null) => (hash ? `sha256 ${hash.slice(0, 12)}…` : "absent");
  return new StoreError(
    "recovery-conflict",
    `Finishing the interrupted publication recorded in ${journalPath} stopped at ${path}: it holds ${short(found)}, ` +
      `neither the bytes that publication was built on (${short(entry.before)}) nor the ones it publishes ` +
      `(${short(entry.after)}), so someone else wrote there. Nothing more was changed. Decide which bytes ${path} ` +
      `should hold, then delete ${journalPath} and retry.`,
    { file: path },
  );
}

async function sha256OfOrNull(read: Promise<Buffer | null>): Promise<string | null> {
  const bytes = await read;
  return bytes === null ? null : sha256Hex(bytes);
}

async function tempHash(temp: string): Promise<string | null> {
  try {
    return sha256Hex(await readFile(temp));
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null;
    throw error;
  }
}

/**
 * Completes the journal's file switch from what is on disk: a member still holding its basis
 * bytes gets its temp copy renamed over it (or is deleted); one already holding the new bytes
 * is done. Anything else is a `recovery-conflict` (nothing more is changed). Deterministic and
 * idempotent, so a recovery killed half-way is finished by the next one.
 */
export async function rollForward(root: string, journalPath: string, journal: Journal): Promise<void> {
  const dirs = new Set<string>();
  for (const entry of journal.entries) {
    const live = await sha256OfOrNull(readOwnedFile(root, entry.path));
    if (live === entry.after) {
      if (entry.temp) await unlink(entry.temp).catch(() => undefined);
      continue;
    }
    if (live !== entry.before) throw conflict(journalPath, entry.path, live, entry);
    if (entry.temp === null) {
      await removeOwnedFile(root, entry.path);
      continue;
    }
    if ((await tempHash(entry.temp)) !== entry.after) throw conflict(journalPath, entry.path, live, entry);
    await rename(entry.temp, join(root, entry.path));
    dirs.add(dirname(join(root, entry.path)));
  }
  await Promise.all([...dirs].map((dir) => fsyncDirectory(dir)));
}

/** Removes the temp copies of a publication that never switched (its ref did not move). */
export async function discardTemps(journal: Journal): Promise<void> {
  await Promise.all(
    journal.entries.map((entry) => (entry.temp ? unlink(entry.temp).catch(() => undefined) : undefined)),
  );
}
