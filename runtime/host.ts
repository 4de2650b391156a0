// What the runtime needs from the program that hosts it (the Pi adapter implements it): the
// selected branch's checkpoint markers, a way to append to that branch, hidden messages, notices
// and tool switching. Nothing here names Pi; the runtime is tested through the real Pi adapter.

import type { ScopeState } from "../storage/core/scope-state.ts";
import type { SessionIdentity } from "../storage/state-store.ts";
import type { BranchMarker } from "../machines/restore.ts";
import type { CarriedRequests } from "../machines/specification.ts";

export type NoticeLevel = "info" | "warning" | "error";

/** A branch checkpoint: the durable cohort the branch is bound to, or the stop that disabled it. */
/** `boundary`: the step and transition the revision holds (a fork finds it by them in a file-only store). */
export type CheckpointData = { revision: string; boundary?: { id: string; step: number } } | { disabled: true };

/** What the host shows once a lifecycle step is done: tools on or off, and the footer text. */
export interface HostView {
  toolsActive: boolean;
  /** False until the first activation: an ordinary session never offers State Flow's tools. */
  toolsRegistered: boolean;
  /**
   * The compact footer, 001's "accent state-flow and dim #<step>": the host styles the name and the
   * detail (the step, "stopped" or "unavailable"); undefined clears it.
   */
  footer: { detail: string } | undefined;
}

export interface BranchHost {
  /** State Flow markers of the selected branch, oldest first. */
  markers(): BranchMarker[];
  /** The session this one was forked from (null: not a fork, or its file is gone). */
  parentSession(): SessionIdentity | null;
  /** Every revision any branch of this session recorded (a cohort outside all of them was never recorded). */
  recordedRevisions(): ReadonlySet<string>;
  appendCheckpoint(data: CheckpointData): void;
  /** The frozen exit handoff as a hidden message: the effective state at the stop boundary (null: none). */
  sendHandoff(state: ScopeState | null): void;
  /** A hidden same-run instruction after an unresolved draft (`attempt` of the steering budget). */
  steer(attempt: number): void;
  /**
   * Records on the branch that the draft `id` was discarded (not the run's answer), so no later
   * projection of the branch shows it, including where State Flow is off (a fork, a stop).
   */
  recordDiscarded(id: number): void;
  /** The interrupted requests the selected branch recorded last (none: nothing carried). */
  carriedRequests(): CarriedRequests;
  /** Records on the branch the interrupted requests the next prompt carries (when they differ from the last record). */
  recordCarried(carried: CarriedRequests): void;
  notify(message: string, level: NoticeLevel): void;
  /** Registers patch_state and read_state (asked once, on the first activation). */
  registerTools(): void;
  sync(view: HostView): void;
  /**
   * State Flow's tools the host could not make active although the last sync asked for them (a
   * tool allowlist, another extension switching them off); empty when they are active.
   */
  missingTools(): readonly string[];
}
