// The user-facing text of every notice the episode machine emits, with its level.

import type { EpisodeNoticeCode } from "../machines/episode.ts";
import type { NoticeLevel } from "./host.ts";

export const NOTICES: Record<EpisodeNoticeCode, { text: string; level: NoticeLevel }> = {
  "not-enabled": { text: "State Flow is not enabled on this branch; nothing to stop.", level: "info" },
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
      "State Flow could not prove this branch's revision (replaced or missing); it stays failed-closed. " +
      "Select a valid checkpoint with /tree.",
    level: "error",
  },
};

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
export function inputRefusedNotice(lockBusy: boolean, detail: string | null): string {
  const why = lockBusy
    ? "the store's publication lock was held when it restored this branch"
    : `it cannot prove this branch's recorded revision${detail ? ` (${detail})` : ""}`;
  const remedy = lockBusy
    ? "Retry /state-flow-start once the other writer is done, or start a new session with /new."
    : "Select a valid checkpoint with /tree, or start a new session with /new.";
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
