// Event alphabets of the run machine (M5) and of the resolution (M2) each of its answers invokes,
// with one sample per payload shape their guards (and the stand-in commit actor) distinguish.
// Every draft carries its own id, so a discard says which draft it was.

import type { DraftEnding, ResolutionMachineEvent } from "../../machines/resolution.ts";
import type { RunInput, RunMachineEvent } from "../../machines/run.ts";
import type { Specification } from "../../machines/specification.ts";
import { RESPONSE_COMMITTED, RESPONSE_REFUSED } from "./alphabets.ts";

export const DRAFT_ENDINGS: readonly DraftEnding[] = ["complete", "aborted", "length", "error", "empty"];

/** A terminal draft ending `ending`, id 1…5 in DRAFT_ENDINGS order. */
export const draftEnding = (ending: DraftEnding) =>
  ({
    type: "DRAFT",
    ending,
    text: `${ending} draft`,
    id: DRAFT_ENDINGS.indexOf(ending) + 1,
    stopReason: ending === "complete" ? "stop" : ending,
  }) as const;

/** The resolution's alphabet: what the run forwards to it, and its commit actor's result. */
export const RESOLUTION_ALPHABET: ResolutionMachineEvent[] = [
  { type: "PATCH_ACCEPTED", final: true },
  { type: "PATCH_ACCEPTED", final: false },
  { type: "FINAL_ONLY" },
  { type: "PATCH_REJECTED" },
  ...DRAFT_ENDINGS.map(draftEnding),
  { type: "TURN_END" },
  RESPONSE_COMMITTED,
  RESPONSE_REFUSED,
];

/** Draft texts the run suite's stand-in commit actor commits, or refuses, at once (any other text: never settles). */
export const COMMITS = "an answer the store commits";
export const REFUSED = "an answer the store refuses";

/** The run's answer's resolution finished (delivered directly, in place of the live child's own done event). */
export const ANSWER_ACCEPTED: RunMachineEvent = {
  type: "xstate.done.actor.resolution",
  actorId: "resolution",
  output: { accepted: true, discarded: [91] },
};
export const ANSWER_NOT_ACCEPTED: RunMachineEvent = {
  type: "xstate.done.actor.resolution",
  actorId: "resolution",
  output: { accepted: false, discarded: [92] },
};
/** The shared-state check's findings: nothing moved, another session's change adopted, a past point kept. */
export const FRESH_CURRENT: RunMachineEvent = {
  type: "xstate.done.actor.freshness",
  actorId: "freshness",
  output: { kind: "current" },
};
export const FRESH_ADOPTED: RunMachineEvent = {
  type: "xstate.done.actor.freshness",
  actorId: "freshness",
  output: {
    kind: "adopted",
    moved: [
      {
        scope: "cwd",
        transitions: 1,
        newest: { id: "t-other", step: 4 },
        added: ["contract.db"],
        changed: [],
        removed: [],
      },
    ],
  },
};
export const FRESH_PAST: RunMachineEvent = {
  type: "xstate.done.actor.freshness",
  actorId: "freshness",
  output: { kind: "selectedPast" },
};
export const FRESH_FAILED: RunMachineEvent = {
  type: "xstate.error.actor.freshness",
  actorId: "freshness",
  error: new Error("cwd/meta.json could not be read"),
};
export const KNOWLEDGE_READY: RunMachineEvent = {
  type: "xstate.done.actor.knowledge",
  actorId: "knowledge",
  output: undefined,
};
export const KNOWLEDGE_FAILED: RunMachineEvent = {
  type: "xstate.error.actor.knowledge",
  actorId: "knowledge",
  error: new Error("discovery failed"),
};

export const OTHER_MESSAGE: RunMachineEvent = { type: "CUSTOM_MESSAGE", customType: "scheduler", ownAnchor: false };
export const OWN_ANCHOR: RunMachineEvent = { type: "CUSTOM_MESSAGE", customType: "state-flow-run", ownAnchor: true };

/** What Pi reports in a run (the resolution's events forwarded while an answer resolves) and the actors' results. */
export const RUN_EVENTS: RunMachineEvent[] = [
  { type: "USER_MESSAGE", text: "also do this" },
  OTHER_MESSAGE,
  OWN_ANCHOR,
  { type: "AGENT_START" },
  { type: "SETTLED" },
  { type: "PATCH_ACCEPTED", final: true },
  { type: "PATCH_ACCEPTED", final: false },
  { type: "FINAL_ONLY" },
  { type: "PATCH_REJECTED", reason: "the store's publication lock is held" },
  { type: "DRAFT", ending: "complete", text: "a draft", id: 11, stopReason: "stop" },
  { type: "DRAFT", ending: "complete", text: COMMITS, id: 12, stopReason: "stop" },
  { type: "DRAFT", ending: "complete", text: REFUSED, id: 13, stopReason: "stop" },
  { type: "DRAFT", ending: "aborted", text: "", id: 14, stopReason: "aborted" },
  { type: "TURN_END" },
  ANSWER_ACCEPTED,
  ANSWER_NOT_ACCEPTED,
  // (the check's other findings, current and selectedPast, take the same transition as adopted)
  FRESH_ADOPTED,
  FRESH_FAILED,
  KNOWLEDGE_READY,
  KNOWLEDGE_FAILED,
];

/** The specification the previous run left (the run's input). */
export const EARLIER: Specification = {
  request: "the earlier request",
  added: ["an earlier addition"],
  startedBy: null,
  unanswered: true,
  interrupted: [{ request: "an interrupted request", added: [] }],
  dropped: 0,
};

/** Every way a run begins (a prompt, a message Pi announced, agent_start alone), equipped or not. */
export const RUN_INPUTS: RunInput[] = [true, false].flatMap((equipped) =>
  (
    [
      { kind: "prompt", text: "the new request" },
      { kind: "message", source: "scheduler" },
      { kind: "unannounced" },
    ] as const
  ).map((opening) => ({ opening, equipped, specification: EARLIER })),
);
