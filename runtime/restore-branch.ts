// The select-restore effect: which durable cohort the selected branch is bound to. The walk over
// the branch's markers is the pure `selectRestore` (machines/restore.ts); this module supplies its
// pointer checks from the store and, first, settles what a killed process left behind: a
// publisher that died holding the lock, or a cohort the store accepted that the branch never
// recorded. Its answer is the RESTORE_RESULT the episode machine decides on.
//
// Sessions older State Flow versions recorded restore here too (spec 001 "Runtime ownership",
// "Existing stores and migration"): an older entry form's pointer is checked like any other and
// the branch then records it in the current form; a revision in an older store form restores
// through runtime/legacy-restore.ts and the branch records what replaces it. Each is said once.

import type { PublicationPolicy } from "../storage/core/codec.ts";
import { errorMessage } from "../storage/core/errors.ts";
import { headBoundary } from "../storage/core/temporal.ts";
import {
  frozenRevision,
  selectRestore,
  type BranchMarker,
  type PointerCheck,
  type RestoreResult,
} from "../machines/restore.ts";
import type { CohortSnapshot } from "../storage/backend.ts";
import type { BranchState, SessionIdentity, StateStore } from "../storage/state-store.ts";
import { isStoreError } from "../storage/store-error.ts";
import { checkpointOf } from "./branch-binding.ts";
import { readForkPoint } from "./fork-copy.ts";
import type { BranchHost } from "./host.ts";
import type { OlderRestore } from "./legacy-restore.ts";
import { olderEntryNotice, unanchoredDetail } from "./notices.ts";

export interface RestoreContext {
  readonly store: StateStore;
  readonly host: BranchHost;
  readonly sessionId: string;
  /** The runtime the branch holds now (a stop frozen in this process, or just now, restores from it). */
  readonly current: () => BranchState | null;
  /** Completes a durable stop the branch never recorded (handoff + markers). */
  readonly freeze: (stopped: BranchState) => void;
  /** The publication policy of a runtime a restore has to build anew (a predecessor's snapshot). */
  readonly policy: PublicationPolicy;
}

export interface RestoreOutcome {
  readonly result: RestoreResult;
  /** The runtime the result selects (a revision, or the frozen boundary of a passive branch). */
  readonly runtime: BranchState | null;
}

export async function restoreBranch(context: RestoreContext): Promise<RestoreOutcome> {
  const { store, host } = context;
  const settled = await interruptedPublication(context);
  if ("kind" in settled) return { result: settled, runtime: null };
  const markers = host.markers();
  const runtimes = new Map<string, BranchState>();
  const failures: string[] = [];
  const unavailable = new Map<string, string>();
  const older = new Map<string, OlderRestore>();
  const inherited = new Map(markers.flatMap((m) => (m.kind === "revision" && m.inherited ? [[m.revision, m]] : [])));
  const found = { runtimes, failures, unavailable, older };
  const result = await selectRestore(
    markers,
    async (revision) => {
      const verdict = await check(context, revision, found, settled.live);
      const marker = inherited.get(revision);
      if (marker === undefined || (verdict !== "invalid" && verdict !== "unavailable")) return verdict;
      const parent = context.host.parentSession();
      // (an unsaved session's fork: Pi names no parent file, so nothing says whose state it was)
      if (parent === null) return { kind: "parentUnavailable", detail: NO_PARENT };
      return (await parentCheck(context.store, parent, revision, marker.boundary)) ?? verdict;
    },
    context.sessionId,
  );
  // What an older store form's restore wrote is said whatever the walk then decided (it stops there).
  for (const restored of older.values()) for (const notice of restored.notices) host.notify(notice, "info");
  if (result.kind === "revision") {
    const runtime = runtimes.get(result.revision)!;
    if (result.skippedInvalid > 0) notifySkipped(host, runtime, result.skippedInvalid, failures);
    return { result: recordCurrentForm(host, result, runtime, older.get(result.revision)), runtime };
  }
  if (result.kind === "unanchored") {
    return { result: { ...result, detail: unanchoredDetail(result.members) }, runtime: null };
  }
  if (result.kind === "unproven" && result.reason === "unavailable" && result.detail === undefined) {
    const detail = unavailable.get(result.revision ?? "");
    return { result: detail ? { ...result, detail } : result, runtime: null };
  }
  if (result.kind === "passive") {
    const restored = runtimes.get(frozenRevision(markers) ?? "");
    return { result, runtime: await frozenRuntime(context.current(), markers, store).catch(() => restored ?? null) };
  }
  return { result, runtime: null };
}

/**
 * Once an older form restored, the branch records its result in the current form, so the next
 * restore reads an ordinary `{revision}`: the revision that replaces an older store form (an
 * "immediate replacement revision pointer"), or the pointer an older entry form carried, said once;
 * and a selected answer's off-branch record, on the branch now.
 */
function recordCurrentForm(
  host: BranchHost,
  result: Extract<RestoreResult, { kind: "revision" }>,
  runtime: BranchState,
  restored: OlderRestore | undefined,
): RestoreResult {
  if (restored?.replaces) {
    host.appendCheckpoint(checkpointOf(runtime));
    return { ...result, revision: runtime.pointer.revision };
  }
  if (result.legacy) {
    host.appendCheckpoint(checkpointOf(runtime));
    host.notify(olderEntryNotice(headBoundary(runtime.view.lineage).step, result.revision), "info");
  }
  // The selected answer's record lies off the branch: once the branch goes on past the answer (a
  // run that records nothing new), only a record on the branch keeps the restore on that answer.
  if (result.offBranch) host.appendCheckpoint(checkpointOf(runtime));
  return result;
}

/** The runtime frozen at stop: the newest valid revision recorded before the disabled marker. */
export async function frozenRuntime(
  current: BranchState | null,
  markers: readonly BranchMarker[],
  store: StateStore,
): Promise<BranchState | null> {
  if (current && !current.config.enabled) return current;
  const revision = frozenRevision(markers);
  return revision ? store.loadPointer({ revision }) : null;
}

/**
 * Before a restore: a publisher that died holding the lock is reported with its remedy (the
 * restore retries on /state-flow-start); then a cohort it published but never recorded on this
 * branch is recorded. Otherwise the restore goes on, with the live cohort read here (the
 * pointer checks decode a pointer it holds from it rather than read it again).
 */
async function interruptedPublication(
  context: RestoreContext,
): Promise<RestoreResult | { live: CohortSnapshot | null }> {
  const markers = context.host.markers();
  const newest = [...markers].reverse().find((m) => m.kind === "revision");
  if (newest?.kind !== "revision") return { live: null }; // nothing to restore: no cohort to tell apart
  try {
    await context.store.assertNoInterruptedPublication();
    const live = await context.store.readLive();
    if (await recordUnrecordedSuccessor(context, markers, live)) return { live: null };
    return { live };
  } catch (error) {
    if (!isStoreError(error, "lock-held")) return { live: null }; // the branch's own pointer still decides
    context.host.notify(errorMessage(error), "warning");
    return { kind: "lockBusy", revision: newest.revision };
  }
}

/**
 * A process killed after the store accepted a cohort but before the branch recorded it: the
 * commit accepted that transition, so the branch records it now (and restores it) instead of
 * restoring the cohort before it next to shared scopes that already hold its changes. Returns
 * whether it recorded one.
 */
async function recordUnrecordedSuccessor(
  context: RestoreContext,
  markers: readonly BranchMarker[],
  live: CohortSnapshot | null,
): Promise<boolean> {
  const newest = markers[markers.length - 1];
  if (newest?.kind !== "revision") return false;
  const successor = await context.store.unrecordedSuccessor(newest.revision, context.host.recordedRevisions(), live);
  if (!successor) return false;
  const where = `step ${headBoundary(successor.view.lineage).step} (${successor.pointer.revision.slice(0, 17)})`;
  if (!successor.config.enabled) {
    context.freeze(successor);
    context.host.notify(
      `State Flow: the stop at ${where} was durable but the session ended before this branch recorded it; ` +
        "it is recorded now.",
      "info",
    );
    return true;
  }
  context.host.appendCheckpoint(checkpointOf(successor));
  context.host.notify(
    `State Flow restored ${where}: the store had accepted it, but the session ended before this branch ` +
      "recorded it. The branch records it now.",
    "info",
  );
  return true;
}

/** What the pointer checks of one restore found, by revision. */
interface Found {
  readonly runtimes: Map<string, BranchState>;
  readonly failures: string[];
  readonly unavailable: Map<string, string>;
  readonly older: Map<string, OlderRestore>;
}

/** A revision in an older store form that is this session's but could not be restored: never fallen back past. */
class OlderFormFailed extends Error {
  constructor(revision: string, cause: unknown) {
    super(
      `the revision ${revision.slice(0, 12)} holds this session in an older State Flow store form, which could ` +
        `not be restored: ${errorMessage(cause)} (Here, "start again" means: once that is fixed, reopen the ` +
        "session or select this point with /tree; the restore then runs again.)",
      { cause },
    );
  }
}

/**
 * The runtime a revision names: read as it is, or, when it holds no runtime of this session, from
 * an older store form (restoring that writes the replacement the branch will record).
 */
async function load(context: RestoreContext, revision: string, found: Found, live: CohortSnapshot | null) {
  try {
    return await context.store.loadPointer({ revision }, live);
  } catch (error) {
    if (!isStoreError(error, "revision-missing")) throw error;
    let restored: OlderRestore | null;
    try {
      // Loaded only here: older store forms are rare, and their modules would otherwise load with the extension.
      const { restoreOlderRevision } = await import("./legacy-restore.ts");
      restored = await restoreOlderRevision(context.store, revision, context.policy);
    } catch (failure) {
      // A missing commit is what it was: an invalid target; anything else is this session's older state.
      if (isStoreError(failure, "revision-missing")) throw error;
      throw new OlderFormFailed(revision, failure);
    }
    if (!restored) throw error;
    found.older.set(revision, restored);
    return restored.runtime;
  }
}

/** A runtime revision this session stopped restores the frozen boundary (passive), never plain off. */
async function check(
  context: RestoreContext,
  revision: string,
  found: Found,
  live: CohortSnapshot | null,
): Promise<PointerCheck> {
  const { runtimes, failures, unavailable } = found;
  try {
    const runtime = await load(context, revision, found, live);
    runtimes.set(revision, runtime);
    return runtime.config.enabled ? "valid" : "stopped";
  } catch (error) {
    if (error instanceof OlderFormFailed) {
      const cause = error.cause;
      // Another writer meanwhile is transient: the pointer is kept for a retried start.
      if (isStoreError(cause, "lock-held") || isStoreError(cause, "stale-basis")) {
        context.host.notify(errorMessage(error), "warning");
        return "lockBusy";
      }
      unavailable.set(revision, errorMessage(error));
      return "unavailable";
    }
    if (isStoreError(error, "lock-held")) {
      context.host.notify(errorMessage(error), "warning");
      return "lockBusy";
    }
    if (isStoreError(error, "pointer-unavailable")) {
      unavailable.set(revision, errorMessage(error)); // why, for the status and the refusal
      return "unavailable";
    }
    failures.push(`${revision.slice(0, 17)}: ${errorMessage(error)}`);
    return "invalid";
  }
}

const NO_PARENT =
  "Pi recorded no file for the session this fork came from (it was not saved, e.g. pi --no-session), so " +
  "State Flow cannot tell whose state that was";

/**
 * A checkpoint Pi copied into a fork that holds no runtime of the fork itself: the parent's state
 * there decides (null: the revision is not the parent's either).
 */
async function parentCheck(
  store: StateStore,
  parent: SessionIdentity,
  revision: string,
  boundary: { id: string; step: number } | undefined,
): Promise<PointerCheck | null> {
  const point = await readForkPoint(store, parent, revision, boundary);
  if (point === null) return null;
  if (point.kind === "copy") return { kind: "parent", copy: point.copy };
  if (point.kind === "stopped") return { kind: "parentStopped" };
  return { kind: "parentUnavailable", detail: point.detail };
}

/** Names what a restore skipped: newer checkpoints of the branch that could not be loaded. */
function notifySkipped(host: BranchHost, runtime: BranchState, skipped: number, failures: readonly string[]): void {
  host.notify(
    `State Flow restored step ${headBoundary(runtime.view.lineage).step} ` +
      `(${runtime.pointer.revision.slice(0, 17)}), not the newest checkpoint of this branch: ${skipped} newer ` +
      `checkpoint entr${skipped === 1 ? "y" : "ies"} could not be loaded` +
      `${failures.length > 0 ? ` (${failures.join("; ")})` : " (malformed)"}. Use /tree to select another point.`,
    "warning",
  );
}
