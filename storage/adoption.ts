// Adopting an active file-only branch into Git (spec 001 "File-only mode": "an already-anchored
// identical Git cohort can reuse its owner revision"). When Git already holds the branch's exact
// cohort — HEAD has every member byte for byte as the branch read it, e.g. because another
// session's start initialized Git over these files — the commit that owns those bytes is what an
// adoption commit would make again. It is reused: nothing is committed, and the index, the user's
// staging and HEAD stay as they are. Anything short of the whole identical cohort is adopted by a
// commit of the complete current files (StateStore.start).

import { isDeepStrictEqual } from "node:util";
import { isFilePointer, sameHashes } from "./cohort-basis.ts";
import type { BranchState, StateStore } from "./state-store.ts";

/**
 * The branch's runtime at the Git revision that owns its exact file cohort, read without writing;
 * null when a commit has to adopt it: Git's HEAD does not hold that cohort identically, or the
 * branch is not an enabled file-backed one (a stopped branch's start changes its config).
 */
export async function reuseAnchoredCohort(store: StateStore, runtime: BranchState): Promise<BranchState | null> {
  const git = store.store.git;
  if (git === null || !isFilePointer(runtime.pointer) || !runtime.config.enabled) return null;
  // Read against HEAD without the branch's proof: live files HEAD does not hold read as diverged (null).
  const live = await store.readLive();
  if (!live?.pointer || isFilePointer(live.pointer) || !sameHashes(live.hashes, runtime.basis.hashes)) return null;
  // The owner is the newest commit that wrote a member; a later commit of other files does not own them.
  const owner = await git.lastCommitOf(store.paths);
  if (owner === null) return null;
  const reused = await store.loadPointer(owner).catch(() => null);
  // The same bytes decode to the same runtime; should they not, a commit adopts it as before.
  const same =
    reused !== null &&
    isDeepStrictEqual(reused.view, runtime.view) &&
    isDeepStrictEqual(reused.meta, runtime.meta) &&
    isDeepStrictEqual(reused.config, runtime.config);
  return same ? reused : null;
}
