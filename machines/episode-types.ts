// The episode machine's (M1) vocabulary: its input and context, the events the host sends, the
// invoked actors' ids and results, and the notices it emits. Types, the actor ids and two helpers
// over an event (an actor's error text, the pointer a restore retains), so the machine module holds
// the statechart itself.
import type { ActorRefFrom, DoneActorEvent, ErrorActorEvent } from "xstate";
import type { publicationMachine, PublicationInput } from "./publication.ts";
import type { RestoreResult } from "./restore.ts";
import type { runMachine, RunOutput } from "./run.ts";
import type { CarriedRequests, RunTrigger, Specification } from "./specification.ts";

export type SessionStartReason = "startup" | "reload" | "new" | "resume" | "fork";
/** What the selected branch holds: nothing at all, conversation without State Flow markers, or markers. */
export type BranchShape = "empty" | "unmarked" | "marked";

export interface EpisodeInput {
  /** Agent-level config `autoStart` (read at extension load). */
  autoStart: boolean;
}
/** The pointer a restore could not complete and why: kept while the branch is failed closed. */
export interface RetainedPointer {
  /** `unanchored`: the branch's newest entry is an older form that names no revision. */
  kind: "unproven" | "lockBusy" | "unanchored";
  /** The selected revision (null when no checkpoint of the branch was valid, or it names none). */
  revision: string | null;
  /** What the store said, when a restore failed before any pointer was checked (`unanchored`: what the entry held). */
  detail?: string;
}
export interface EpisodeContext {
  autoStart: boolean;
  /** Tools are registered with Pi once, on the first activation, and only switched on and off after. */
  toolsRegistered: boolean;
  /** Set exactly while failed closed: the status report names it, a retried start restores it. */
  retained: RetainedPointer | null;
  /** The open Pi run's actor (M5); null between runs. */
  run: ActorRefFrom<typeof runMachine> | null;
  /**
   * The specification the last run left: the next run a message starts continues it, the next prompt
   * carries its open requests. A session or a /tree starts from what its branch recorded.
   */
  specification: Specification;
  /** State Flow's tools the host could not make active although asked (said once each time they go missing). */
  toolsMissing: readonly string[];
  /** The session this branch belongs to (the runtime's identity, opaque here); null before session_start. */
  identity: object | null;
  /**
   * The branch's loaded state (the runtime's, opaque here): set by what the runtime loads, accepts or
   * refreshes; dropped at session_start and wherever no branch is bound (off, failed closed, closed).
   */
  loaded: object | null;
}

/** What the host sends. The invoked actors' results arrive as their own done and error events. */
export type EpisodeEvent =
  /** `carried`: the interrupted requests the selected branch recorded (none: nothing carried). */
  | {
      type: "SESSION_START";
      reason: SessionStartReason;
      branch: BranchShape;
      identity?: object;
      carried?: CarriedRequests;
    }
  /** The runtime loaded, accepted or refreshed the branch's state (null: it holds none). */
  | { type: "LOADED"; state: object | null }
  /** The runtime opened a store generation's publication: it lives here, in the branch's actor system. */
  | { type: "PUBLICATION_OPENED"; logic: typeof publicationMachine; input: PublicationInput }
  | { type: "START"; adoptGit?: boolean }
  | { type: "STOP" }
  /** /tree selected another point of the session (`carried`: the requests that point recorded). */
  | { type: "TREE"; carried?: CarriedRequests }
  /** before_agent_start: Pi begins a run for a prompt or a message (`toolsMissing`: State Flow's tools inactive). */
  | { type: "RUN_ANNOUNCED"; trigger: RunTrigger; toolsMissing: boolean }
  /** agent_start: a run's continuation, or a run no before_agent_start announced. */
  | { type: "AGENT_START"; toolsMissing: boolean }
  /** After each step: which of State Flow's tools the host could not make active (empty: all are). */
  | { type: "TOOLS_SYNCED"; missing: readonly string[] }
  /**
   * session_shutdown. `unsaved`: Pi never saved the session (its file is not on disk, or it is in memory) and
   * it does not go on (not a reload): nobody can resume it, so the store session it started may go too.
   */
  | { type: "SHUTDOWN"; unsaved?: boolean };

/** The ids of the invoked actors: their results are `xstate.done.actor.<id>` / `xstate.error.actor.<id>`. */
export const EPISODE_ACTORS = { storage: "storage", restore: "restore", stop: "stop", discard: "discard" } as const;
/** Every event the machine takes: the host's and the invoked actors' results. */
export type EpisodeMachineEvent =
  | EpisodeEvent
  /** (a fork's start outputs where its copy came from, for its notice) */
  | DoneActorEvent<string | void, "storage">
  | ErrorActorEvent<unknown, "storage">
  | DoneActorEvent<RestoreResult, "restore">
  | ErrorActorEvent<unknown, "restore">
  | DoneActorEvent<void, "stop">
  | ErrorActorEvent<unknown, "stop">
  /** (an unsaved session's discard outputs the store session folder it removed, or null when it removed nothing) */
  | DoneActorEvent<string | null, "discard">
  | ErrorActorEvent<unknown, "discard">
  /** The run's actor (spawned) ended at agent_settled: `output.accepted` when an answer became response. */
  | DoneActorEvent<RunOutput, "run">;

/** A notice for the person; `detail` is the named cause when the code alone cannot say it. */
export type EpisodeEmitted = { type: "episode.notice"; code: EpisodeNoticeCode; detail?: string };
export type EpisodeNoticeCode =
  | "not-enabled"
  | "already-stopped"
  | "already-active"
  | "stop-refused-unproven"
  | "start-refused-unproven"
  | "start-failed"
  | "adopted-into-git"
  | "adoption-failed"
  | "stop-failed"
  | "restore-lock-busy"
  | "restore-unproven"
  | "restore-unanchored"
  | "stop-refused-unanchored"
  | "tools-missing"
  | "started"
  | "stopped"
  | "fork-off"
  | "forked"
  | "fork-unavailable"
  | "unsaved-removed"
  | "unsaved-kept";
/** What a fork's start copies: the parent's session layer the restore read (the runtime's, opaque here). */
export interface StartForkInput {
  copy: object;
}
/** What starting the store does: a new session origin, or a restart from the frozen stop boundary. */
export interface StartStorageInput {
  fromFrozen: boolean;
}

/** An invoked actor's error in the words a notice carries. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The pointer a restore that proved nothing retains (shown by status; a later start retries it), else null. */
export function retainedOf(event: EpisodeMachineEvent): RetainedPointer | null {
  // A restore that failed outright checked no pointer: unproven, with the store's own words.
  if (event.type === "xstate.error.actor.restore")
    return { kind: "unproven", revision: null, detail: errorText(event.error) };
  if (event.type !== "xstate.done.actor.restore") return null;
  const result = event.output;
  if (result.kind !== "unproven" && result.kind !== "lockBusy" && result.kind !== "unanchored") return null;
  return {
    kind: result.kind,
    revision: result.kind === "unanchored" ? null : result.revision,
    ...(result.detail === undefined ? {} : { detail: result.detail }),
  };
}
