// Where git is: the PATH search that decides "git absent" (storage/open-store.ts: file-only) without
// loading the runner, the Git backend or simple-git, so a store that never uses Git never loads them.

import { accessSync, constants as fsConstants, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** Finds an executable `git` on PATH (or checks an explicit binary); null when absent. */
export function findGitExecutable(env: NodeJS.ProcessEnv = process.env, binary?: string): string | null {
  const candidates = binary
    ? [binary]
    : (env.PATH ?? "")
        .split(delimiter)
        .filter((dir) => dir.length > 0 && isAbsolute(dir))
        .map((dir) => join(dir, process.platform === "win32" ? "git.exe" : "git"));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
