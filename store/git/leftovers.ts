// What killed Git publications leave behind without a journal — isolated index copies, journal
// temp copies, temp copies of live files, a stamped index.lock — and its removal once the owner
// is provably gone. The file names carry the owner's pid; removal runs under the publication
// lock with no journal left, so no live State Flow publication of any process uses them.

import { readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { pidIsGone } from "../fs/lock.ts";
import { JOURNAL_FILE_NAME } from "../fs/journal.ts";
import { readIndexLockHolder } from "./index-lock.ts";

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
export async function removeLeftovers(repo: LeftoverDirs, dirs: readonly string[]): Promise<void> {
  const gone = (pid: number) => pid === process.pid || pidIsGone(pid);
  const sweep = async (dir: string, pattern: RegExp) => {
    const names = await readdir(dir).catch(() => [] as string[]);
    await Promise.all(
      names.map(async (name) => {
        const match = pattern.exec(name);
        if (match && gone(Number(match[1]))) await unlink(join(dir, name)).catch(() => undefined);
      }),
    );
  };
  const storeDirs = new Set(["", ...dirs.map((dir) => (dir === "." ? "" : dir))]);
  const lockPath = join(repo.gitDir, "index.lock");
  await Promise.all([
    sweep(repo.gitDir, ISOLATED_INDEX),
    sweep(repo.commonDir, JOURNAL_TEMP),
    ...[...storeDirs].map((dir) => sweep(join(repo.root, dir), STORE_TEMP)),
    readIndexLockHolder(lockPath)
      .then((holder) => (holder.stale ? unlink(lockPath) : undefined))
      .catch(() => undefined),
  ]);
}
