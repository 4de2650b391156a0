// What a fork copies from the session it was forked from (spec 001 "Each enabled new session gets its
// own empty session layer … never borrows another session's values"; a fork is a copy at a named
// point, not a borrow): the parent's session layer at the boundary the fork point recorded. Pi copies
// the parent's entries into the fork, so the fork's branch holds the parent's checkpoints; the newest
// one names the parent's revision there. A Git store reads that revision as it was; a file-only store
// keeps only each session's newest files, so it finds the boundary the checkpoint named among the
// eight the parent still holds, or says the copy is no longer kept.

import { availableOffsets, headBoundary, readTemporalState, type Boundary } from "../storage/core/temporal.ts";
import { errorMessage } from "../storage/core/errors.ts";
import { StateStore, type BranchState, type ForkCopy, type SessionIdentity } from "../storage/state-store.ts";
import { isStoreError } from "../storage/store-error.ts";

/** What the parent holds at a fork point (null: the revision is not the parent's either). */
export type ForkPoint =
  { kind: "copy"; copy: ForkCopy } | { kind: "stopped" } | { kind: "unavailable"; detail: string } | null;

/**
 * The parent's session layer at `revision`. `boundary`: the boundary the checkpoint recorded with it
 * (absent in checkpoints older versions wrote), which a file-only store looks up in the parent's
 * newest eight.
 */
export async function readForkPoint(
  own: StateStore,
  parent: SessionIdentity,
  revision: string,
  boundary: Pick<Boundary, "id" | "step"> | undefined,
): Promise<ForkPoint> {
  const store = new StateStore(own.store, parent);
  try {
    const state = await store.loadPointer({ revision });
    if (!state.config.enabled) return { kind: "stopped" };
    return { kind: "copy", copy: copyOf(parent, revision, state, 0) };
  } catch (error) {
    if (isStoreError(error, "revision-missing")) return null;
    if (!isStoreError(error, "pointer-unavailable")) {
      return { kind: "unavailable", detail: `the parent session's state could not be read: ${errorMessage(error)}` };
    }
  }
  return fromHotWindow(store, parent, revision, boundary);
}

/** File-only: the boundary the fork point recorded, among those the parent's current files still hold. */
async function fromHotWindow(
  store: StateStore,
  parent: SessionIdentity,
  revision: string,
  boundary: Pick<Boundary, "id" | "step"> | undefined,
): Promise<ForkPoint> {
  const kept =
    "a file-only store keeps only the newest eight steps of each session; with Git every step stays readable";
  if (!boundary) {
    return { kind: "unavailable", detail: `the fork point names no step State Flow can look up, and ${kept}` };
  }
  const current = await store.loadCurrent().catch(() => null);
  if (!current) return { kind: "unavailable", detail: `the parent session's files could not be read, and ${kept}` };
  for (let offset = 0; offset < availableOffsets(current.view.lineage); offset++) {
    const read = readTemporalState(current.view, offset, "session");
    if (read.boundary.id !== boundary.id) continue;
    return {
      kind: "copy",
      copy: { sessionKey: parent.sessionKey, revision, boundary: read.boundary, state: read.state },
    };
  }
  const head = headBoundary(current.view.lineage).step;
  return {
    kind: "unavailable",
    detail: `the fork point is step ${boundary.step} and the parent session is at step ${head} now; ${kept}`,
  };
}

function copyOf(parent: SessionIdentity, revision: string, state: BranchState, offset: number): ForkCopy {
  const read = readTemporalState(state.view, offset, "session");
  return { sessionKey: parent.sessionKey, revision, boundary: read.boundary, state: read.state };
}

/** The fork notice's detail: whose state at which step was copied. */
export function forkedDetail(copy: ForkCopy): string {
  return `step ${copy.boundary.step}, transition ${copy.boundary.id.slice(0, 10)} of session ${copy.sessionKey}`;
}
