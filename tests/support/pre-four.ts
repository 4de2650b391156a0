// The pre-0.4 layout, written by hand from spec 001 "Existing stores and migration" ("The untagged
// pre-0.4 development layout that appended SHA-256 suffixes"): a store State Flow wrote is moved,
// with git mv, into cwd and session directories whose names carry a SHA-256 digest after Pi's
// names, and committed as that version would have (HEAD).

import { createHash } from "node:crypto";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { openStore } from "../../storage/open-store.ts";
import { StateStore, type BranchState, type SessionIdentity } from "../../storage/state-store.ts";
import { git, initRepo, type TempDirs } from "./store-fixtures.ts";

export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The suffixed cwd and session directories of `id` (store-relative). */
export function suffixedDirs(id: SessionIdentity): { cwdDir: string; sessionDir: string } {
  const cwdDir = `${id.cwdKey}-${sha256(id.cwd)}`;
  return { cwdDir, sessionDir: `${cwdDir}/${id.sessionKey}-${sha256(id.sessionId)}` };
}

/** A Git store with `steps` cwd+session transitions, then moved into the pre-0.4 layout and committed. */
export async function preFourRepo(temps: TempDirs, prefix: string, id: SessionIdentity, steps: number) {
  const repo = initRepo(temps, prefix);
  const state = new StateStore(await openStore({ root: repo.dir, env: repo.env, initGit: true }), id);
  let runtime: BranchState = await state.start(null, "off");
  for (let n = 1; n <= steps; n++) {
    const { patches } = parsePatchSet({ cwd: { working: { n } }, session: { working: { n } } });
    runtime = (await state.commit(runtime, patches, `step ${n}`)).runtime;
  }
  const { cwdDir, sessionDir } = suffixedDirs(id);
  git(repo.dir, repo.env, "mv", "--", id.cwdKey, cwdDir);
  git(repo.dir, repo.env, "mv", "--", `${cwdDir}/${id.sessionKey}`, sessionDir);
  git(repo.dir, repo.env, "commit", "-q", "-m", "pre-0.4 layout");
  return { ...repo, revision: git(repo.dir, repo.env, "rev-parse", "HEAD").trim(), before: runtime };
}
