// Resolution machine: terminal eligibility and resolution retries of ONE enabled run
// (spec 001 "Unified semantic mutation and terminal resolution"). Pure. The adapter creates one
// actor per enabled user run, forwards patch_state outcomes, terminal drafts (message_end) and
// turn_end, and reacts to the emitted effects.
import { setup, assign, emit, type SnapshotFrom } from "xstate";

/** Hidden same-run instructions issued for unresolved visible drafts before the run gives up. */
export const MAX_RESOLUTION_STEERS = 2;

/**
 * How a terminal assistant draft ended. Only "complete" is an attempted terminal completion;
 * aborted, length-limited, provider-error and empty endings are interrupted: never a response,
 * and they consume neither eligibility nor the steering budget.
 */
export type DraftEnding = "complete" | "aborted" | "length" | "error" | "empty";

export type ResolutionEvent =
  | { type: "PATCH_ACCEPTED"; final: boolean }
  | { type: "FINAL_ONLY" }
  | { type: "PATCH_REJECTED" }
  | { type: "DRAFT"; ending: DraftEnding }
  | { type: "TURN_END" }
  | { type: "RUN_ENDED" };

export type ResolutionEmitted =
  | { type: "resolution.steer"; attempt: number }
  | { type: "resolution.exhausted"; attempts: number }
  | { type: "resolution.discardDraft"; reason: "unresolved" | "interrupted" }
  | { type: "resolution.commitResponse" };

export interface ResolutionContext {
  /** Unresolved complete drafts seen so far in this run. */
  attempts: number;
}

export function hasSteerBudget(attempts: number): boolean {
  return attempts < MAX_RESOLUTION_STEERS;
}

export const resolutionMachine = setup({
  types: {
    context: {} as ResolutionContext,
    events: {} as ResolutionEvent,
    emitted: {} as ResolutionEmitted,
  },
  guards: {
    isFinalPatch: ({ event }) => event.type === "PATCH_ACCEPTED" && event.final,
    isCompleteDraft: ({ event }) => event.type === "DRAFT" && event.ending === "complete",
    isInterruptedDraft: ({ event }) => event.type === "DRAFT" && event.ending !== "complete",
    canSteer: ({ context, event }) => event.type === "DRAFT" && event.ending === "complete" && hasSteerBudget(context.attempts),
  },
  actions: {
    countAttempt: assign({ attempts: ({ context }) => context.attempts + 1 }),
    discardUnresolvedDraft: emit({ type: "resolution.discardDraft", reason: "unresolved" } as const),
    discardInterruptedDraft: emit({ type: "resolution.discardDraft", reason: "interrupted" } as const),
    steerHiddenSameRun: emit(({ context }) => ({ type: "resolution.steer", attempt: context.attempts }) as const),
    reportExhausted: emit(({ context }) => ({ type: "resolution.exhausted", attempts: context.attempts }) as const),
    commitResponse: emit({ type: "resolution.commitResponse" } as const),
  },
}).createMachine({
  id: "resolution",
  context: { attempts: 0 },
  initial: "ineligible",
  states: {
    ineligible: {
      description: "No final:true latched in this run: a complete visible draft is not a response.",
      initial: "fresh",
      on: {
        PATCH_ACCEPTED: [{ guard: "isFinalPatch", target: "eligible" }, {}],
        FINAL_ONLY: { target: "eligible" },
        PATCH_REJECTED: {},
        DRAFT: [
          { guard: "isInterruptedDraft", actions: ["discardInterruptedDraft"] },
          { guard: "canSteer", target: ".steered", actions: ["discardUnresolvedDraft", "countAttempt", "steerHiddenSameRun"] },
          { target: "exhausted", actions: ["discardUnresolvedDraft", "countAttempt", "reportExhausted"] },
        ],
        RUN_ENDED: { target: "abandoned" },
      },
      states: {
        fresh: { description: "Every enabled iteration begins here." },
        steered: { description: "An unresolved draft was discarded and a hidden same-run instruction sent." },
      },
    },
    eligible: {
      description: "final:true latched for the next accepted turn_end; tools and later patches still allowed.",
      on: {
        PATCH_ACCEPTED: {},
        FINAL_ONLY: {},
        PATCH_REJECTED: {},
        DRAFT: [{ guard: "isCompleteDraft", target: "candidate" }, { actions: ["discardInterruptedDraft"] }],
        RUN_ENDED: { target: "abandoned" },
      },
    },
    candidate: {
      description: "An eligible complete draft awaits turn_end.",
      on: { TURN_END: { target: "accepted", actions: ["commitResponse"] } },
    },
    accepted: {
      type: "final",
      description: "The answer was committed to response as a transition at turn_end.",
    },
    exhausted: {
      type: "final",
      description: "Third unresolved attempt: one concise error; committed state and enablement kept; steering ends.",
    },
    abandoned: {
      type: "final",
      description: "The run ended without an accepted answer (interrupted or aborted): response unchanged.",
    },
  },
});

export type ResolutionSnapshot = SnapshotFrom<typeof resolutionMachine>;

export function isTerminalEligible(s: ResolutionSnapshot): boolean {
  return s.matches("eligible") || s.matches("candidate");
}
/** True once the run's answer is committed to response. */
export function isResponseCommitted(s: ResolutionSnapshot): boolean {
  return s.matches("accepted");
}
/** Hidden steers issued so far (≤ MAX_RESOLUTION_STEERS). */
export function steersUsed(s: ResolutionSnapshot): number {
  return Math.min(s.context.attempts, MAX_RESOLUTION_STEERS);
}
/** Steering is over for this run (accepted, exhausted or abandoned). */
export function isResolutionSettled(s: ResolutionSnapshot): boolean {
  return s.status === "done";
}
