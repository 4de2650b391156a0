// What killed Git publications leave behind without a journal — isolated index copies, journal
// temp copies, temp copies of live files, a stamped index.lock — and its removal once the owner
// is provably gone. The file names carry the owner's pid; removal runs under the publication
// lock with no journal left, so no live State Flow publication of any process uses them.

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { unlinkQuietlySync } from "../fs/fs-safe.ts";
import { pidIsGone } from "../fs/lock.ts";
import { JOURNAL_FILE_NAME } from "../fs/journal.ts";
import { readIndexLockHolderSync } from "./index-lock.ts";

const ISOLATED_INDEX = /^state-flow-index\.(\d+)\.[0-9a-f]+(\.lock)?$/;
const STORE_TEMP = /^\..+\.sf-(\d+)-[0-9a-f]+\.tmp$/;
const JOURNAL_TEMP = new RegExp(`^\\.${JOURNAL_FILE_NAME.replace(/\./g, "\\.")}\\.(\\d+)\\.tmp$`);

export interface LeftoverDirs {
  /** The store root (the worktree). */
  readonly root: string;
  readonly gitDir: string;
  readonly commonDir: string;
}

/**
 * Removes what killed publications left, where this process can prove the owner is gone: the
 * file names carry the owner's pid, and this runs under the publication lock with no journal
 * left, so no State Flow publication of any process is using them. Isolated index copies and
 * journal temp copies under `.git`, temp copies of live files in `dirs` (and the store root),
 * and an index.lock stamped by a State Flow process of this host that no longer runs.
 */
export function removeLeftovers(repo: LeftoverDirs, dirs: readonly string[]): void {
  // Synchronous: a handful of small directories, read under the publication lock on every
  // publication, where a thread-pool round trip per call costs more than the calls themselves.
  const gone = (pid: number) => pid === process.pid || pidIsGone(pid);
  const sweep = (dir: string, patterns: readonly RegExp[]) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const match = patterns.map((pattern) => pattern.exec(name)).find((m) => m !== null);
      if (match && gone(Number(match[1]))) unlinkQuietlySync(join(dir, name));
    }
  };
  const storeDirs = new Set(["", ...dirs.map((dir) => (dir === "." ? "" : dir))]);
  if (repo.gitDir === repo.commonDir) sweep(repo.gitDir, [ISOLATED_INDEX, JOURNAL_TEMP]);
  else {
    sweep(repo.gitDir, [ISOLATED_INDEX]);
    sweep(repo.commonDir, [JOURNAL_TEMP]);
  }
  for (const dir of storeDirs) sweep(join(repo.root, dir), [STORE_TEMP]);
  const lockPath = join(repo.gitDir, "index.lock");
  if (readIndexLockHolderSync(lockPath).stale) unlinkQuietlySync(lockPath);
}
