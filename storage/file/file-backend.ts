// File-only backend: used only when the `git` executable is absent (or before Git is initialized).
// A cohort is the complete set of a session's store files (global + cwd + session). Its pointer
// is `file:<sha256 of the canonical listing>` of the session scope's members, each with the
// sha256 of its bytes (or "-" when absent), sorted by path bytes (cohort-basis.ts):
//
//   state-flow file cohort v2 (session scope)\n
//   <sha256 hex or -> <path>\n   (one line per session-scope member)
//
// So a pointer proves the branch-owned files (session stream, config and meta), not the shared
// global/cwd files other sessions advance; those are read live. Pointers an older version
// recorded over every member (header "state-flow file cohort v1") resolve while all of it holds.
//
// Publication = lock → finish any interrupted publication (journal.ts) → per-file compare-and-swap
// of every member against the caller's basis → fsynced temp copies → the journal → renames (data
// files, then config, then meta) → journal removed → new pointer. A killed publisher leaves the
// old cohort (no journal yet) or a journal from which the next one finishes the new cohort. A
// failed write is rolled back from the verified basis bytes; if even that fails the lock is kept.

import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import {
  PRIVATE_DIR_MODE,
  prepareOwnedFilesAtomic,
  readOwnedFile,
  readOwnedFilesSync,
  removeOwnedFile,
  sha256Hex,
  writeOwnedFileAtomic,
} from "../fs/fs-safe.ts";
import { finishBeforeReading, readJournal, removeJournal, rollForward, writeJournal } from "../fs/journal.ts";
import {
  FILE_JOURNAL_NAME,
  FILE_LOCK_NAME,
  filePointerOf,
  hashFiles,
  isFilePointer,
  journalEntries,
  loadIfCurrent,
  provesFileCohort,
  sameBytes,
  sameFiles,
  splitWrites,
  validateRequest,
  verifyBasis,
} from "../cohort-basis.ts";
import { comparePaths } from "../layout.ts";
import { acquirePublicationLock, lockExists, lockHeldError, readLockOwner, readUntilSettled } from "../fs/lock.ts";
import { StoreError } from "../store-error.ts";
import type { CohortSnapshot, PublishReceipt, PublishRequest, StoreBackend, StorePointer } from "../backend.ts";

/** The members' bytes, read at once: the shorter the read, the less often a publication overlaps it. */
async function readCohort(root: string, paths: readonly string[]): Promise<Map<string, Buffer | null>> {
  return readOwnedFilesSync(root, [...paths].sort(comparePaths));
}

/** Fault-injection hooks for tests: faults a real filesystem cannot be made to produce on demand. */
export interface FileBackendFaults {
  /** Called before the batch of writes for each written member, and before each deletion; throw to fail there. */
  readonly beforeWrite?: ((path: string) => void) | undefined;
  /** Called after a failure, before the rollback reads the members (e.g. to play a concurrent external writer). */
  readonly beforeRollback?: (() => void) | undefined;
}

export class FileBackend implements StoreBackend {
  readonly kind = "file" as const;
  readonly root: string;
  readonly lockPath: string;
  readonly journalPath: string;
  private readonly generation: string;
  private readonly faults: FileBackendFaults;

  constructor(root: string, options: { generation: string } & FileBackendFaults) {
    this.root = root;
    this.generation = options.generation;
    this.faults = { beforeWrite: options.beforeWrite, beforeRollback: options.beforeRollback };
    this.lockPath = join(root, FILE_LOCK_NAME);
    this.journalPath = join(root, FILE_JOURNAL_NAME);
  }

  async readFile(path: string): Promise<Buffer | null> {
    return readOwnedFile(this.root, path);
  }

  /**
   * The live cohort. While another writer holds the publication lock its renames may be half
   * done, so the read is refused as lock-held (retryable) rather than returning a mixed cohort.
   * A lock-free moment before the read is not enough: a writer can take the lock, rename part of
   * the cohort while the members are being read and release it again, leaving e.g. a new
   * checkpoint beside an old tail. So the members are read again after a moment without the lock:
   * identical bytes both times are the cohort that moment held (stream files never repeat bytes,
   * each record has a fresh id), and a writer mid-rename then holds the lock.
   */
  async loadCurrent(paths: readonly string[]): Promise<CohortSnapshot> {
    const held = async () => {
      if (await lockExists(this.lockPath)) throw lockHeldError(this.lockPath, await readLockOwner(this.lockPath));
    };
    await held();
    await finishBeforeReading(this.journalPath, this.lockPath, this.generation, () => this.finishInterrupted());
    const read = async () => {
      await held();
      return readCohort(this.root, paths);
    };
    // Two reads that agree, with the lock free before each: a cohort as one moment held it.
    const files = await readUntilSettled(this.lockPath, read, (files, previous) =>
      previous !== null && sameFiles(previous, files) ? files : undefined,
    );
    const hashes = hashFiles(files);
    return { pointer: filePointerOf(hashes), files, hashes };
  }

  /**
   * File-only mode keeps no history: a pointer resolves only while the session files it names are
   * the current ones; the shared scopes come as they are now.
   */
  async loadRevision(pointer: StorePointer, paths: readonly string[]): Promise<CohortSnapshot> {
    if (!isFilePointer(pointer)) {
      throw new StoreError(
        "invalid-pointer",
        `${JSON.stringify(pointer.revision)} is not a file-only cohort pointer ("file:<64 lowercase hex>"); ` +
          `a Git revision needs the Git backend.`,
      );
    }
    return loadIfCurrent(pointer, await this.loadCurrent(paths));
  }

  async publish(request: PublishRequest): Promise<PublishReceipt> {
    const members = validateRequest(request);
    // Shared members are guarded by the per-file compare-and-swap below, not by the pointer.
    if (request.basis.pointer !== null && !provesFileCohort(request.basis.pointer, request.basis.hashes)) {
      // A basis the caller did not read from this store (e.g. a Git revision while git is absent) is reread.
      if (request.basisUnread) {
        throw new StoreError(
          "stale-basis",
          `Stale basis: ${request.basis.pointer.revision} is not a file cohort of this file-only store. ` +
            `Nothing was written; reload the current view, restage the cohort on it and retry.`,
        );
      }
      throw new StoreError(
        "invalid-pointer",
        `The basis pointer ${request.basis.pointer.revision} does not name the basis hashes' file cohort; ` +
          `publish on a snapshot loaded from this file-only store.`,
      );
    }
    await mkdir(this.root, { recursive: true, mode: PRIVATE_DIR_MODE });
    const lock = await acquirePublicationLock(this.lockPath, {
      generation: this.generation,
      purpose: "file-only publication",
    });
    let keepLock = false;
    try {
      await this.finishInterrupted();
      const current = await readCohort(this.root, members);
      const currentHashes = hashFiles(current);
      verifyBasis(request.basis, currentHashes);
      const { puts, deletions } = splitWrites(request.writes);
      for (const [path] of puts) this.faults.beforeWrite?.(path);
      const prepared = await prepareOwnedFilesAtomic(this.root, puts);
      const entries = journalEntries(puts, prepared.temps, deletions, currentHashes);
      try {
        if (entries.length > 0) {
          await writeJournal(this.journalPath, { version: 1, pid: process.pid, generation: this.generation, entries });
        }
      } catch (error) {
        await prepared.abort();
        throw error;
      }
      const written: string[] = puts.map(([path]) => path); // a failed batch is rolled back as a whole
      try {
        await prepared.commit();
        for (const path of deletions) {
          this.faults.beforeWrite?.(path);
          written.push(path);
          await removeOwnedFile(this.root, path);
        }
      } catch (error) {
        keepLock = true; // until the rollback proves the old cohort is back
        await this.rollBackSwitch(error, written, current, request.writes);
        keepLock = false;
        throw error;
      }
      if (entries.length > 0) await removeJournal(this.journalPath);
      const hashes = new Map(currentHashes);
      for (const [path, bytes] of request.writes) hashes.set(path, bytes === null ? null : sha256Hex(bytes));
      const changed = members.filter((p) => hashes.get(p) !== currentHashes.get(p));
      return { pointer: filePointerOf(hashes), hashes, changed, committed: changed.length > 0 };
    } finally {
      if (!keepLock) await lock.release();
    }
  }

  /** Finishes a publication a killed process left half done (its journal), under the caller's lock. */
  private async finishInterrupted(): Promise<void> {
    const journal = await readJournal(this.journalPath);
    if (journal === null) return;
    await rollForward(this.root, this.journalPath, journal);
    await removeJournal(this.journalPath);
  }

  /**
   * A write or deletion failed part-way (an I/O error, not a crash): the members are rolled back
   * by receipt and the journal removed. Returns once the old cohort is back; throws (the caller
   * keeps the lock) when it could not be restored exactly.
   */
  private async rollBackSwitch(
    error: unknown,
    written: readonly string[],
    current: ReadonlyMap<string, Buffer | null>,
    receipt: ReadonlyMap<string, Buffer | null>,
  ): Promise<void> {
    this.faults.beforeRollback?.();
    let preserved: string[];
    try {
      preserved = await this.rollBack(written, current, receipt);
    } catch (rollbackError) {
      await removeJournal(this.journalPath).catch(() => undefined);
      throw new StoreError(
        "io-failed",
        `File-only publication failed (${String(error)}) and rolling back ${written.join(", ")} failed too ` +
          `(${String(rollbackError)}). The publication lock ${this.lockPath} is kept so nothing else builds on a ` +
          `partial cohort; restore those files from the previous cohort, then remove the lock.`,
        { file: written[0] ?? this.lockPath, cause: error },
      );
    }
    await removeJournal(this.journalPath);
    if (preserved.length > 0) {
      throw new StoreError(
        "rollback-conflict",
        `File-only publication failed (${String(error)}); its other files were restored, but ` +
          `${preserved.join(", ")} changed after this publication wrote ${preserved.length === 1 ? "it" : "them"} ` +
          `(someone else wrote there), so the rollback preserved those bytes instead of replacing them. ` +
          `The publication lock ${this.lockPath} is kept so nothing builds on a mixed cohort: decide which bytes ` +
          `${preserved.length === 1 ? "that file" : "those files"} should hold, then remove the lock.`,
        { file: preserved[0], cause: error },
      );
    }
  }

  /**
   * Restores the verified basis bytes of the members a failed publication touched, using its
   * receipt (the exact prepared outputs): a member is restored only while it still holds what
   * this publication wrote (a deletion: is still absent); one that still holds its basis bytes
   * needs nothing. Any other bytes were written by someone else meanwhile and are preserved, not
   * replaced; their paths are returned.
   */
  private async rollBack(
    written: readonly string[],
    basis: ReadonlyMap<string, Buffer | null>,
    receipt: ReadonlyMap<string, Buffer | null>,
  ): Promise<string[]> {
    const preserved: string[] = [];
    for (const path of [...written].reverse()) {
      const before = basis.get(path) ?? null;
      const now = await readOwnedFile(this.root, path);
      if (sameBytes(now, before)) continue;
      if (!sameBytes(now, receipt.get(path) ?? null)) {
        preserved.push(path);
        continue;
      }
      if (before === null) await removeOwnedFile(this.root, path);
      else await writeOwnedFileAtomic(this.root, path, before);
    }
    return preserved.reverse();
  }
}
