// Branch restore selection: a pure function over the selected branch's State Flow markers
// (spec 001 "Runtime ownership and Git publication", "File-only recovery"). The episode machine
// consumes its result as RESTORE_RESULT. Pointer checks are asynchronous (they read the store)
// and run lazily, newest marker first, only as far as the walk needs.

/** A State Flow checkpoint marker found on the selected Pi branch (oldest first). */
export type BranchMarker =
  /**
   * `legacy`: an older entry form carrying copied config/meta/state beside its pointer (only the pointer is read).
   * `offBranch`: the checkpoint of the selected answer, recorded after it and so not on the branch Pi selected.
   */
  | {
      kind: "revision";
      revision: string;
      legacy?: true;
      offBranch?: true;
      /** The boundary the checkpoint recorded with the revision (absent in entries older versions wrote). */
      boundary?: { id: string; step: number };
      /** Copied into this session when Pi forked it: the parent session's checkpoint. */
      inherited?: true;
    }
  /** A checkpoint entry that is not a valid `{revision}` / `{disabled:true}` nor an older form: always skipped. */
  | { kind: "malformed" }
  /**
   * An older entry form with semantic state or an enabled runtime's config/meta but no immutable
   * pointer (`members`: what it carried): nothing proves it, and it is no disabled marker either.
   */
  | { kind: "unanchored"; members: readonly string[] }
  | {
      kind: "disabled";
      /** physical session whose STOP wrote this marker and its frozen handoff */ stoppedBy?: string;
    };

/**
 * What checking a revision pointer found:
 * - valid: the immutable target exists, belongs to this runtime and is enabled;
 * - stopped: a valid target of this session whose runtime was stopped (the frozen boundary);
 * - invalid: malformed or missing immutable target → fall back through the branch;
 * - unavailable: a file-only cohort that was replaced → retain the pointer (never pass current files off as the
 *   past);
 * - lockBusy: transient publication lock → retain the pointer for retry;
 * - parent: in a fork, the pointer is the parent session's and `copy` is its session layer there (opaque here);
 * - parentStopped: in a fork, the parent's runtime at the pointer was stopped (the fork stays off);
 * - parentUnavailable: in a fork, the parent's state at the pointer is no longer kept (`detail`: why).
 */
export type PointerCheck =
  | "valid"
  | "stopped"
  | "invalid"
  | "unavailable"
  | "lockBusy"
  | { kind: "parent"; copy: object }
  | { kind: "parentStopped" }
  | { kind: "parentUnavailable"; detail: string };

export type RestoreResult =
  /** `legacy`: the selected pointer came from an older entry form; `offBranch`: from the selected answer's record. */
  | { kind: "revision"; revision: string; skippedInvalid: number; legacy?: true; offBranch?: true }
  | { kind: "passive" }
  /** `inherited`: the stop was another session's (the parent of a fork or copy): that session's, not this one's. */
  | { kind: "disabled"; inherited?: true }
  /** A fork of an enabled State Flow session: it starts as its own copy of the parent's session layer (`copy`). */
  | { kind: "fork"; revision: string; copy: object }
  /** A fork whose parent state at the fork point is no longer kept: it starts off and says why (`detail`). */
  | { kind: "forkUnavailable"; revision: string; detail: string }
  | { kind: "none" }
  | { kind: "unproven"; revision: string | null; reason: "unavailable" | "noValidPointer"; detail?: string }
  | { kind: "lockBusy"; revision: string; detail?: string }
  /** The newest decisive marker is an unanchored older entry: fails closed, an explicit start replaces it. */
  | { kind: "unanchored"; members: readonly string[]; detail?: string };

/**
 * Walks markers newest → oldest. Invalid immutable targets (and malformed entries) fall back to
 * older markers; unavailable cohorts and lock failures retain the selected pointer instead of
 * falling through to an older disabled marker. A disabled marker written by this physical
 * session, or a stopped runtime revision, restores the passive handoff; a disabled marker
 * inherited from another session (fork, copy) is an ordinary disabled branch. In a fork, the
 * parent's newest pointer decides: its session layer is copied, or (stopped, no longer kept) the
 * fork starts off. An unanchored older
 * entry ends the walk too: falling back past it would pass older state off as the branch's.
 */
export async function selectRestore(
  markers: readonly BranchMarker[],
  check: (revision: string) => PointerCheck | Promise<PointerCheck>,
  physicalSessionId: string,
): Promise<RestoreResult> {
  let skippedInvalid = 0;
  for (let i = markers.length - 1; i >= 0; i--) {
    const marker = markers[i]!;
    if (marker.kind === "malformed") {
      skippedInvalid++;
      continue;
    }
    if (marker.kind === "unanchored") return { kind: "unanchored", members: marker.members };
    if (marker.kind === "disabled") {
      if (marker.stoppedBy === undefined) return { kind: "disabled" };
      return marker.stoppedBy === physicalSessionId ? { kind: "passive" } : { kind: "disabled", inherited: true };
    }
    const verdict = await check(marker.revision);
    if (typeof verdict === "object") {
      if (verdict.kind === "parent") return { kind: "fork", revision: marker.revision, copy: verdict.copy };
      if (verdict.kind === "parentStopped") return { kind: "disabled", inherited: true };
      return { kind: "forkUnavailable", revision: marker.revision, detail: verdict.detail };
    }
    if (verdict === "valid") {
      return {
        kind: "revision",
        revision: marker.revision,
        skippedInvalid,
        ...(marker.legacy ? { legacy: true as const } : {}),
        ...(marker.offBranch ? { offBranch: true as const } : {}),
      };
    }
    if (verdict === "stopped") return { kind: "passive" };
    if (verdict === "lockBusy") return { kind: "lockBusy", revision: marker.revision };
    if (verdict === "unavailable") return { kind: "unproven", revision: marker.revision, reason: "unavailable" };
    skippedInvalid++;
  }
  if (skippedInvalid > 0) return { kind: "unproven", revision: null, reason: "noValidPointer" };
  return { kind: "none" };
}

/** The newest well-formed revision at or before the newest disabled marker (the frozen runtime). */
export function frozenRevision(markers: readonly BranchMarker[]): string | null {
  for (let i = markers.length - 1; i >= 0; i--) {
    const m = markers[i]!;
    if (m.kind === "revision") return m.revision;
  }
  return null;
}
