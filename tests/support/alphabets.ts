// Event alphabets the generated model-based suites explore: every event of a machine, with one
// sample per payload shape its guards distinguish. Shared by the pure machine suites and the
// replay of their paths through a real Pi session, so both walk the same graph.

import type { EpisodeMachineEvent } from "../../machines/episode-types.ts";
import type { ResolutionMachineEvent } from "../../machines/resolution.ts";
import { publicationMachine } from "../../machines/publication.ts";
import type { RestoreResult } from "../../machines/restore.ts";
import { NO_SPECIFICATION } from "../../machines/specification.ts";

export const SESSION_START_REASONS = ["startup", "reload", "new", "resume", "fork"] as const;
export const BRANCH_SHAPES = ["empty", "unmarked", "marked"] as const;

export const RESTORE_RESULTS: RestoreResult[] = [
  { kind: "revision", revision: "r-sel", skippedInvalid: 0 },
  { kind: "passive" },
  { kind: "disabled" },
  { kind: "disabled", inherited: true },
  { kind: "fork", revision: "r-parent", copy: {} },
  { kind: "forkUnavailable", revision: "r-parent", detail: "the parent's state there is no longer kept" },
  { kind: "none" },
  { kind: "unproven", revision: "r-sel", reason: "unavailable" },
  { kind: "lockBusy", revision: "r-sel" },
  { kind: "unanchored", members: ["state"] },
];

/** The invoked actors' results: success, and a failure with the error the store gave. */
export const STORAGE_READY: EpisodeMachineEvent = {
  type: "xstate.done.actor.storage",
  actorId: "storage",
  output: undefined,
};
/** A fork's start succeeded: its output names what it copied (for the notice). */
export const FORK_COPIED: EpisodeMachineEvent = {
  type: "xstate.done.actor.storage",
  actorId: "storage",
  output: "step 3, transition abcdef12 of session parent",
};
export const STORAGE_FAILED: EpisodeMachineEvent = {
  type: "xstate.error.actor.storage",
  actorId: "storage",
  error: new Error("store failed"),
};
export const STOP_PERSISTED: EpisodeMachineEvent = {
  type: "xstate.done.actor.stop",
  actorId: "stop",
  output: undefined,
};
export const STOP_FAILED: EpisodeMachineEvent = {
  type: "xstate.error.actor.stop",
  actorId: "stop",
  error: new Error("store failed"),
};
/** An unsaved session's discard removed its empty start (the folder), removed nothing, or failed. */
export const DISCARD_REMOVED: EpisodeMachineEvent = {
  type: "xstate.done.actor.discard",
  actorId: "discard",
  output: "/store/project/session",
};
export const DISCARD_NOTHING: EpisodeMachineEvent = {
  type: "xstate.done.actor.discard",
  actorId: "discard",
  output: null,
};
export const DISCARD_FAILED: EpisodeMachineEvent = {
  type: "xstate.error.actor.discard",
  actorId: "discard",
  error: new Error("publication lock held"),
};
export const RESTORE_FAILED: EpisodeMachineEvent = {
  type: "xstate.error.actor.restore",
  actorId: "restore",
  error: new Error("store unreadable"),
};
export const restored = (result: RestoreResult): EpisodeMachineEvent => ({
  type: "xstate.done.actor.restore",
  actorId: "restore",
  output: result,
});

/** The run's actor ended (agent_settled), an answer of it committed to response or not. */
export const RUN_ACCEPTED: EpisodeMachineEvent = {
  type: "xstate.done.actor.run",
  actorId: "run",
  output: { accepted: true, specification: { ...NO_SPECIFICATION, request: "the request" } },
};
export const RUN_NOT_ACCEPTED: EpisodeMachineEvent = {
  type: "xstate.done.actor.run",
  actorId: "run",
  output: { accepted: false, specification: { ...NO_SPECIFICATION, request: "the request" } },
};
/** Pi announces a run for a prompt, State Flow's tools active or not. */
export const RUN_ANNOUNCED: EpisodeMachineEvent = {
  type: "RUN_ANNOUNCED",
  trigger: { kind: "prompt", text: "the request" },
  toolsMissing: false,
};

export const EPISODE_EVENTS: EpisodeMachineEvent[] = [
  ...SESSION_START_REASONS.flatMap((reason) =>
    BRANCH_SHAPES.map((branch) => ({ type: "SESSION_START", reason, branch }) as const),
  ),
  { type: "START" },
  { type: "START", adoptGit: true },
  { type: "STOP" },
  { type: "TREE" },
  { type: "TREE", carried: { interrupted: [{ request: "an interrupted request", added: [] }], dropped: 1 } },
  RUN_ANNOUNCED,
  { type: "RUN_ANNOUNCED", trigger: { kind: "message", source: "other-extension" }, toolsMissing: false },
  { type: "RUN_ANNOUNCED", trigger: { kind: "prompt", text: "the request" }, toolsMissing: true },
  { type: "AGENT_START", toolsMissing: false },
  { type: "AGENT_START", toolsMissing: true },
  { type: "TOOLS_SYNCED", missing: ["patch_state"] },
  { type: "TOOLS_SYNCED", missing: [] },
  { type: "LOADED", state: { revision: "r-loaded" } },
  { type: "LOADED", state: null },
  {
    type: "PUBLICATION_OPENED",
    logic: publicationMachine,
    input: { policy: "turn-end", backend: "file", remote: false },
  },
  RUN_ACCEPTED,
  RUN_NOT_ACCEPTED,
  STORAGE_READY,
  STORAGE_FAILED,
  STOP_PERSISTED,
  STOP_FAILED,
  { type: "SHUTDOWN" },
  { type: "SHUTDOWN", unsaved: true },
  DISCARD_REMOVED,
  DISCARD_NOTHING,
  DISCARD_FAILED,
  ...RESTORE_RESULTS.map(restored),
  RESTORE_FAILED,
];

/** The resolution's commit actor: the response committed, or the store refused it. */
export const RESPONSE_COMMITTED: ResolutionMachineEvent = {
  type: "xstate.done.actor.commit",
  actorId: "commit",
  output: undefined,
};
export const RESPONSE_REFUSED: ResolutionMachineEvent = {
  type: "xstate.error.actor.commit",
  actorId: "commit",
  error: new Error("store refused the response"),
};
