// The select-restore effect: which durable cohort the selected branch is bound to. The walk over
// the branch's markers is the pure `selectRestore` (machines/restore.ts); this module supplies its
// pointer checks from the store and, first, settles what a killed process left behind: a
// publisher that died holding the lock, or a cohort the store accepted that the branch never
// recorded. Its answer is the RESTORE_RESULT the episode machine decides on.

import { errorMessage } from "../core/errors.ts";
import { headBoundary } from "../core/temporal.ts";
import {
  frozenRevision,
  selectRestore,
  type BranchMarker,
  type PointerCheck,
  type RestoreResult,
} from "../machines/restore.ts";
import type { CohortSnapshot } from "../store/backend.ts";
import type { BranchRuntime, StateStore } from "../store/state-store.ts";
import { isStoreError } from "../store/store-error.ts";
import type { BranchHost } from "./host.ts";

export interface RestoreContext {
  readonly store: StateStore;
  readonly host: BranchHost;
  readonly sessionId: string;
  /** The runtime the branch holds now (a stop frozen in this process, or just now, restores from it). */
  readonly current: () => BranchRuntime | null;
  /** Completes a durable stop the branch never recorded (handoff + markers). */
  readonly freeze: (stopped: BranchRuntime) => void;
}

export interface RestoreOutcome {
  readonly result: RestoreResult;
  /** The runtime the result selects (a revision, or the frozen boundary of a passive branch). */
  readonly runtime: BranchRuntime | null;
}

export async function restoreBranch(context: RestoreContext): Promise<RestoreOutcome> {
  const { store, host } = context;
  const settled = await interruptedPublication(context);
  if ("kind" in settled) return { result: settled, runtime: null };
  const markers = host.markers();
  const runtimes = new Map<string, BranchRuntime>();
  const failures: string[] = [];
  const unavailable = new Map<string, string>();
  const result = await selectRestore(
    markers,
    (revision) => check(context, revision, runtimes, failures, unavailable, settled.live),
    context.sessionId,
  );
  if (result.kind === "revision") {
    const runtime = runtimes.get(result.revision)!;
    if (result.skippedInvalid > 0) notifySkipped(host, runtime, result.skippedInvalid, failures);
    return { result, runtime };
  }
  if (result.kind === "unproven" && result.reason === "unavailable" && result.detail === undefined) {
    const detail = unavailable.get(result.revision ?? "");
    return { result: detail ? { ...result, detail } : result, runtime: null };
  }
  if (result.kind === "passive") {
    return { result, runtime: await frozenRuntime(context.current(), markers, store).catch(() => null) };
  }
  return { result, runtime: null };
}

/** The runtime frozen at stop: the newest valid revision recorded before the disabled marker. */
export async function frozenRuntime(
  current: BranchRuntime | null,
  markers: readonly BranchMarker[],
  store: StateStore,
): Promise<BranchRuntime | null> {
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
  context.host.appendCheckpoint({ revision: successor.pointer.revision });
  context.host.notify(
    `State Flow restored ${where}: the store had accepted it, but the session ended before this branch ` +
      "recorded it. The branch records it now.",
    "info",
  );
  return true;
}

/** A runtime revision this session stopped restores the frozen boundary (passive), never plain off. */
async function check(
  context: RestoreContext,
  revision: string,
  runtimes: Map<string, BranchRuntime>,
  failures: string[],
  unavailable: Map<string, string>,
  live: CohortSnapshot | null,
): Promise<PointerCheck> {
  try {
    const runtime = await context.store.loadPointer({ revision }, live);
    runtimes.set(revision, runtime);
    return runtime.config.enabled ? "valid" : "stopped";
  } catch (error) {
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

/** Names what a restore skipped: newer checkpoints of the branch that could not be loaded. */
function notifySkipped(host: BranchHost, runtime: BranchRuntime, skipped: number, failures: readonly string[]): void {
  host.notify(
    `State Flow restored step ${headBoundary(runtime.view.lineage).step} ` +
      `(${runtime.pointer.revision.slice(0, 17)}), not the newest checkpoint of this branch: ${skipped} newer ` +
      `checkpoint entr${skipped === 1 ? "y" : "ies"} could not be loaded` +
      `${failures.length > 0 ? ` (${failures.join("; ")})` : " (malformed)"}. Use /tree to select another point.`,
    "warning",
  );
}
