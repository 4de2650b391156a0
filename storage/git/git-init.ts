// Creates the store's repository so that no other process ever sees it half made. Several Pi
// sessions may open a new store at the same moment; `git init` in place writes `.git` piece by
// piece, and a second opener that found `.git` already there but not yet its HEAD was told "not a
// git repository" and refused to start. So the repository is made in a private folder beside the
// store (outside it, so that nothing left by a killed opener is ever published) and its `.git`
// renamed into place in one step: an opener sees no `.git` or a whole one. When two make one at
// once, the first rename wins and the other's copy is removed. Where the store is a mount point
// (the rename crosses file systems) it is made in place, as plain `git init` does.

import { randomBytes } from "node:crypto";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { PRIVATE_DIR_MODE } from "../fs/fs-safe.ts";
import type { GitRunner } from "./git-runner.ts";

/** `git init` at `root`, atomically; a repository another process made meanwhile is kept as it is. */
export async function initRepositoryAtomically(root: string, runner: GitRunner): Promise<void> {
  await mkdir(root, { recursive: true, mode: PRIVATE_DIR_MODE });
  const scratch = `${root}.sf-init-${process.pid}-${randomBytes(4).toString("hex")}`;
  await mkdir(scratch, { mode: PRIVATE_DIR_MODE });
  try {
    await runner.exec(["init", "-q", scratch]); // never deletes existing files
    try {
      await rename(join(scratch, ".git"), join(root, ".git"));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EXDEV") await runner.exec(["init", "-q"]);
      // Otherwise another opener's `.git` is in place (a non-empty directory cannot be renamed over).
      else if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
