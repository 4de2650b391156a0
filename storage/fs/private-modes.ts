// A store State Flow did not create — the remote cloned into the store before its first start, as
// the README sets a second machine up — arrives with the umask's modes (folders 0755, files 0644),
// readable by every user of the machine, while State Flow writes 0700/0600 (state can hold private
// session content). Opening such a store tightens it once: the root to 0700 (which alone keeps
// every path beneath it, .git included, from other users) and its folders and files outside .git to
// 0700/0600. A root already private costs one lstat. Git tracks only the executable bit, so this
// changes nothing `git status` shows.

import { chmod, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { PRIVATE_DIR_MODE } from "./fs-safe.ts";

const PRIVATE_FILE_MODE = 0o600;

/** Tightens `root` and what lies beneath it (outside .git) when the root is open to other users. */
export async function keepPrivate(root: string): Promise<boolean> {
  const stat = await lstat(root);
  if (!stat.isDirectory() || (stat.mode & 0o077) === 0) return false;
  await chmod(root, PRIVATE_DIR_MODE);
  await tighten(root, true);
  return true;
}

async function tighten(dir: string, top: boolean): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (top && entry.name === ".git") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      await chmod(path, PRIVATE_DIR_MODE);
      await tighten(path, false);
    } else if (entry.isFile()) await chmod(path, PRIVATE_FILE_MODE);
    // (a symlink is left alone: chmod would follow it out of the store)
  }
}
