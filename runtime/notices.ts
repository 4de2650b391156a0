// The user-facing text of every notice the episode machine emits, with its level, and the other
// texts the runtime says.

import type { EpisodeNoticeCode } from "../machines/episode-types.ts";
import type { NoticeLevel } from "./host.ts";

/** What an explicit start changes, said after where the state is kept (startedNotice). */
const STARTED_NEXT =
  "From now on the model sees the state and the current run instead of the whole transcript (the next run still " +
  "sees the conversation so far, to carry what matters into state). /state-flow-status shows it; /state-flow-stop " +
  "turns it off.";

export const NOTICES: Record<Exclude<EpisodeNoticeCode, "tools-missing">, { text: string; level: NoticeLevel }> = {
  started: {
    text: `State Flow is on for this branch. ${STARTED_NEXT}`,
    level: "info",
  },
  "fork-off": {
    text:
      "This session is a fork of a State Flow session that was stopped at the fork point, so State Flow is off " +
      "here too: the model gets the conversation as plain Pi, without State Flow's own messages and tool calls. " +
      "/state-flow-start turns it on for this fork, with its own empty session state over the shared global and " +
      "project state.",
    level: "info",
  },
  forked: {
    text:
      "This session is a fork of a State Flow session: State Flow is on here, with its own copy of the session " +
      "state at the fork point over the shared global and project state as they are now. The other session is " +
      "unchanged; /state-flow-status shows where the copy came from.",
    level: "info",
  },
  "fork-unavailable": {
    text:
      "This session is a fork of a State Flow session, but State Flow could not copy that session's state at " +
      "the fork point, so it is off here: the model gets the conversation as plain Pi. /state-flow-start turns " +
      "it on for this fork, with its own empty session state (the conversation so far migrates in its next run).",
    level: "warning",
  },
  stopped: {
    text:
      "State Flow is off for this branch: ordinary Pi from now on. Nothing is deleted: the state at this point " +
      "is kept, and the model sees it once more as a frozen handoff. /state-flow-start turns it back on.",
    level: "info",
  },
  "not-enabled": { text: "State Flow is not enabled on this branch; nothing to stop.", level: "info" },
  "already-stopped": {
    text: "State Flow is already stopped on this branch; nothing to stop. /state-flow-start turns it back on.",
    level: "info",
  },
  "already-active": { text: "State Flow is already active on this branch.", level: "info" },
  "stop-refused-unproven": {
    text:
      "State Flow cannot stop: this branch's provenance is unproven, and stopping would let failed recovery " +
      "replace existing runtime. Select a valid checkpoint with /tree, then retry.",
    level: "error",
  },
  "start-refused-unproven": {
    text:
      "State Flow cannot start: this branch's provenance is unproven. Select a valid checkpoint with /tree, " +
      "then retry.",
    level: "error",
  },
  "start-failed": {
    text: "State Flow could not initialize its store; see the previous error. Nothing was enabled.",
    level: "error",
  },
  "adopted-into-git": {
    text:
      "State Flow adopted this branch's file-only store into Git: its current state is now a commit, and " +
      "every later transition is one too.",
    level: "info",
  },
  "adoption-failed": {
    text:
      "State Flow could not adopt this branch's store into Git (see the previous error); it stays enabled on " +
      "its unchanged file-only store. Fix the cause and run /state-flow-start again.",
    level: "error",
  },
  "stop-failed": {
    text:
      "State Flow could not persist the stop (see the previous error); the branch stays enabled. Retry " +
      "/state-flow-stop once the store is writable.",
    level: "error",
  },
  "restore-lock-busy": {
    text:
      "State Flow could not restore this branch: the store's publication lock is held. The selected revision " +
      "is kept; retry /state-flow-start once the other writer is done.",
    level: "warning",
  },
  "restore-unproven": {
    text:
      "State Flow could not prove this branch's revision; it stays failed-closed and runs no prompt. Select a " +
      "valid checkpoint with /tree, or repair what the reason names and /reload.",
    level: "error",
  },
  "restore-unanchored": {
    text:
      "State Flow could not restore this branch: its newest checkpoint entry is an older State Flow form that " +
      "carries state or runtime config/meta but names no revision, so nothing in the store proves it; it stays " +
      "failed-closed rather than turning the branch off. Run /state-flow-start to establish an empty session " +
      "origin here (the earlier conversation is migrated in one bootstrap run; the older entry is not imported), " +
      "or select an anchored checkpoint with /tree.",
    level: "error",
  },
  "unsaved-removed": { text: unsavedSessionRemovedNotice(null), level: "info" },
  "unsaved-kept": { text: unsavedSessionKeptNotice(null), level: "warning" },
  "stop-refused-unanchored": {
    text:
      "State Flow cannot stop: this branch holds no durable runtime to disable, only an older checkpoint entry " +
      "that names no revision. Run /state-flow-start to establish an empty session origin here, select an " +
      "anchored checkpoint with /tree, or start a new session with /new.",
    level: "error",
  },
};

/**
 * A failed step with its own error is one notice: what failed, the error (which names its cause and
 * fix), then what that left and how to go on. (The code's text alone, pointing back at "the previous
 * error", is for a failure that arrived without one.)
 */
const FAILED_STEP: Partial<Record<EpisodeNoticeCode, { prefix: string; then: string }>> = {
  "start-failed": {
    prefix: "State Flow start failed: ",
    then: "Nothing was enabled; run /state-flow-start again once that is fixed.",
  },
  "adoption-failed": {
    prefix: "State Flow could not adopt this branch's store into Git: ",
    then:
      "The branch stays enabled on its unchanged file-only store; run /state-flow-start again once that is " + "fixed.",
  },
  "stop-failed": {
    prefix: "State Flow could not persist the stop: ",
    then: "The branch stays enabled; retry /state-flow-stop once the store is writable.",
  },
};

/**
 * The lines an episode notice is shown as: one. A failed step says its cause first, then what it
 * left; an unproven restore carries its reason in the same line.
 */
export function episodeNotices(
  code: EpisodeNoticeCode,
  detail: string | undefined,
): Array<{ text: string; level: NoticeLevel }> {
  if (code === "tools-missing") return [{ text: toolsMissingNotice(detail?.split(", ") ?? []), level: "warning" }];
  const { text, level } = NOTICES[code];
  if (detail === undefined) return [{ text, level }];
  if (code === "restore-unproven") return [{ text: `${text} Reason: ${detail}`, level }];
  if (code === "forked") return [{ text: text.replace("at the fork point", `at the fork point (${detail})`), level }];
  if (code === "fork-unavailable") return [{ text: `${text} Why: ${detail}`, level }];
  if (code === "unsaved-removed") return [{ text: unsavedSessionRemovedNotice(detail), level }];
  if (code === "unsaved-kept") return [{ text: unsavedSessionKeptNotice(detail), level }];
  const step = FAILED_STEP[code];
  if (!step) return [{ text, level }];
  const cause = /[.!?]$/.test(detail.trim()) ? detail.trim() : `${detail.trim()}.`;
  return [{ text: `${step.prefix}${cause} ${step.then}`, level: "error" }];
}

/** What an explicit start says: that it is on, where the state is kept (`store`: where and what kind), what follows. */
export function startedNotice(store: string): string {
  return `State Flow is on for this branch; its state is kept in ${store}. ${STARTED_NEXT}`;
}

/**
 * Said when a session ends that Pi never saved (no conversation yet) and the start it held was removed from
 * the store (`folder`: where it was), so the start notice's "kept in" is corrected at once, with what would
 * keep it.
 */
export function unsavedSessionRemovedNotice(folder: string | null): string {
  return (
    "Pi did not save this session (it ended before any conversation), so it cannot be resumed: State Flow " +
    `removed the session state it had started${folder === null ? "" : `, ${folder}`}. Start State Flow in a ` +
    "session you continue (pi -c), or together with a request."
  );
}

/** The removal of an unsaved session's start failed (`reason`: the store's error): its folder stays, unused. */
export function unsavedSessionKeptNotice(reason: string | null): string {
  return (
    "Pi did not save this session, and State Flow could not remove the session state it had started" +
    `${reason === null ? "" : `: ${reason.trim().replace(/\.$/, "")}`}. The folder stays unused; it can be ` +
    "deleted once no Pi process uses the store."
  );
}

/** Said once while State Flow is enabled but its tools cannot be active (see BranchHost.missingTools). */
export function toolsMissingNotice(missing: readonly string[]): string {
  return (
    `State Flow is enabled, but its tools are not active (${missing.join(", ")}): a tool allowlist (pi --tools) ` +
    "or another extension leaves them out. Until they are, runs are ordinary Pi runs: no State Flow protocol or " +
    "runtime context is sent and answers are not recorded. Add them to the allowlist (e.g. " +
    "--tools read,bash,edit,write,patch_state,read_state) or stop State Flow with /state-flow-stop."
  );
}

/** Said when a user prompt reaches a failed-closed branch (the prompt is not run). */
export function inputRefusedNotice(kind: "unproven" | "lockBusy" | "unanchored", detail: string | null): string {
  const why =
    kind === "lockBusy"
      ? "the store's publication lock was held when it restored this branch"
      : kind === "unanchored"
        ? `this branch's newest checkpoint entry cannot be proven${detail ? ` (${detail})` : ""}`
        : `it cannot prove this branch's recorded revision${detail ? ` (${detail})` : ""}`;
  const remedy =
    kind === "lockBusy"
      ? "Retry /state-flow-start once the other writer is done, or start a new session with /new."
      : kind === "unanchored"
        ? "Run /state-flow-start to establish an empty session origin here (the earlier conversation is migrated " +
          "in one bootstrap run; the older entry is not imported), select an anchored checkpoint with /tree, or " +
          "start a new session with /new."
        : "Select a valid checkpoint with /tree, or start a new session with /new. Where the reason names a " +
          "damaged file, repair it as it says, then /reload to restore this branch again.";
  return (
    `State Flow did not run this prompt: it is failed closed on this branch because ${why}, and neither its ` +
    `state nor the raw transcript may stand in for it. ${remedy}`
  );
}

/** Said once after a start converted legacy state.json snapshots into checkpoints. */
export function legacyMigratedNotice(result: { scopes: readonly string[]; revision: string }): string {
  return (
    `State Flow migrated the legacy state.json of the ${result.scopes.join(", ")} scope(s) into checkpoints with an ` +
    `empty tail (revision ${result.revision}); the state is unchanged and state.json is gone.`
  );
}

/** Said once after a start moved retired contract.compiled_skills entries into Skill artifacts. */
export function legacySkillsNotice(
  migrated: readonly { path: string; to: string; verified: boolean; superseded: boolean }[],
): string {
  const moved = migrated.filter((m) => !m.superseded);
  const unverified = moved.filter((m) => !m.verified).map((m) => m.path);
  const superseded = migrated.filter((m) => m.superseded).map((m) => m.path);
  return (
    `State Flow moved ${moved.length} legacy Skill compilation(s) from contract.compiled_skills into Skill ` +
    `artifacts (${moved.map((m) => `${m.path} → ${m.to}`).join(", ") || "none"}).` +
    (unverified.length > 0 ? ` Unverified (source unreadable): ${unverified.join(", ")}.` : "") +
    (superseded.length > 0 ? ` Dropped, a Skill artifact already held them: ${superseded.join(", ")}.` : "")
  );
}

/** Why a branch whose newest entry is an unanchored older form is failed closed (the retained pointer's detail). */
export function unanchoredDetail(members: readonly string[]): string {
  return (
    `its newest State Flow entry is an older form carrying ${members.join(", ")} but no revision, ` +
    "so nothing in the store proves it"
  );
}

/** Said once when a restore selected an older entry form's pointer; the branch then records the current form. */
export function olderEntryNotice(step: number, revision: string): string {
  return (
    `State Flow restored step ${step} (${revision.slice(0, 17)}) from an older State Flow checkpoint entry: only ` +
    "its revision was read, never the config, meta or state it carries. The branch now records that revision " +
    'in the current form ({"revision": …}).'
  );
}

/** Said once when a predecessor's state.json snapshot at the branch's revision became this session's checkpoint. */
export function predecessorRestoredNotice(from: string, step: number, to: string): string {
  return (
    `State Flow restored this branch from an older version's state.json snapshot (revision ${from.slice(0, 12)}): ` +
    `it is now the session scope's checkpoint with an empty tail, at step ${step} of revision ${to.slice(0, 12)}, ` +
    "which the branch records from now on. The semantic state is unchanged; offsets before this origin are " +
    `unavailable, and ${from.slice(0, 12)} stays in Git as that history.`
  );
}

/**
 * Said once when startup moved this session's pre-0.4 directories (SHA-256-suffixed names) to
 * Pi's names; `replaced`: the branch's selected revision was that layout's HEAD and is replaced.
 */
export function layoutAdoptedNotice(moved: string, revision: string, replaced: boolean, selected: string): string {
  return (
    `State Flow moved this session's pre-0.4 store layout (${moved}) to Pi-native paths in revision ` +
    `${revision.slice(0, 12)}, with the same bytes: state, step, lineage and hot history are unchanged. ` +
    (replaced
      ? `The branch now records ${revision.slice(0, 12)} in place of ${selected.slice(0, 12)}, which stays in Git.`
      : `This branch's selected revision ${selected.slice(0, 12)} is older and is read as it is there; its next ` +
        "transition is written in the Pi-native layout.")
  );
}
