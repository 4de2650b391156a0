// Resolution machine: terminal eligibility and resolution retries of ONE answer an enabled run owes
// (spec 001 "Unified semantic mutation and terminal resolution"). Pure. The run machine (M5) invokes
// one actor per answer and forwards it patch_state outcomes, terminal drafts (message_end) and
// turn_end. What it does to the host (a hidden steer, a discarded draft recorded on the branch, the
// exhaustion and commit-failure notices) are named actions whose stand-ins emit what they stand
// for; the runtime supplies the real ones and the `commitResponse` actor invoked at turn_end (its
// failure is a drawn transition) through `provide`. The output says whether the answer became
// response and which drafts were discarded: the run keeps both.
//
// The retry budget is structural: `ineligible.fresh` → `ineligible.retry1` → … →
// `ineligible.retryN` → `exhausted`, one named state per hidden steer already sent, built from
// MAX_RESOLUTION_STEERS. The generated config stays plain JSON (what Stately's editor loads).
import { setup, assign, emit, fromPromise, type DoneActorEvent, type ErrorActorEvent, type SnapshotFrom } from "xstate";

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
  /** `reason`: the refusal's own words (the run keeps the newest, so an exhausted answer can say why). */
  | { type: "PATCH_REJECTED"; reason?: string }
  /** `id` tells the host's messages apart; `stopReason` is what the provider said (diagnostics). */
  | { type: "DRAFT"; ending: DraftEnding; text?: string; id?: number; stopReason?: string }
  | { type: "TURN_END" };

/** Every event the machine takes: the runtime's and the commit actor's result. */
export type ResolutionMachineEvent =
  ResolutionEvent | DoneActorEvent<void, "commit"> | ErrorActorEvent<unknown, "commit">;

export type ResolutionEmitted =
  | { type: "resolution.steer"; attempt: number }
  | { type: "resolution.exhausted"; attempts: number }
  | { type: "resolution.discardDraft"; reason: "unresolved" | "interrupted"; id: number }
  | { type: "resolution.commitFailed"; error: string };

/** What the committing state hands its actor: the eligible draft's text, to become response. */
export interface CommitResponseInput {
  text: string;
}

/** The answer's outcome, the machine's output: whether it became response, and the drafts discarded on the way. */
export interface ResolutionOutput {
  accepted: boolean;
  discarded: readonly number[];
}

export interface ResolutionContext {
  /** The eligible complete draft awaiting turn_end (what becomes response). */
  candidate: string | null;
  /** The drafts discarded so far (their ids): no later projection of the run shows them. */
  discarded: readonly number[];
  /**
   * Hidden steers sent so far. The ladder's state says it only while the run is ineligible; a refusal
   * logged after final:true latched (spec 001: the log names the attempt) still needs the number.
   */
  steers: number;
}

const draftId = (event: ResolutionMachineEvent): number => (event.type === "DRAFT" ? (event.id ?? 0) : 0);

const discardedDraft = (reason: "unresolved" | "interrupted", event: ResolutionMachineEvent) =>
  ({ type: "resolution.discardDraft", reason, id: draftId(event) }) as const;

const retryState = (n: number) => (n === 0 ? "fresh" : `retry${n}`);

/** Builds the machine for a steering budget; production uses MAX_RESOLUTION_STEERS. */
export function createResolutionMachine(maxSteers: number) {
  const ladder: Record<string, object> = {};
  for (let n = 0; n <= maxSteers; n++) {
    const last = n === maxSteers;
    ladder[retryState(n)] = {
      description:
        n === 0
          ? "Every enabled run begins here: no final:true latched, no unresolved draft yet."
          : `${n} unresolved draft(s) discarded and answered with a hidden same-run instruction.`,
      on: {
        DRAFT: [
          { guard: "isInterruptedDraft", actions: ["keepDiscarded", "recordInterruptedDraft"] },
          last
            ? {
                target: "#resolution.exhausted",
                actions: [
                  "keepDiscarded",
                  "recordUnresolvedDraft",
                  { type: "reportExhausted", params: { attempts: n + 1 } },
                ],
              }
            : {
                target: retryState(n + 1),
                actions: [
                  "keepDiscarded",
                  "countSteer",
                  "recordUnresolvedDraft",
                  { type: "steerHiddenSameRun", params: { attempt: n + 1 } },
                ],
              },
        ],
      },
    };
  }
  return setup({
    types: {
      context: {} as ResolutionContext,
      events: {} as ResolutionMachineEvent,
      emitted: {} as ResolutionEmitted,
      output: {} as ResolutionOutput,
    },
    actors: {
      /** Supplied by the runtime (`provide`): commits the text as the session's response, a transition. */
      commitResponse: fromPromise<void, CommitResponseInput>(async () => {
        throw new Error("resolution actor commitResponse is supplied by the runtime (provide)");
      }),
    },
    guards: {
      isFinalPatch: ({ event }) => event.type === "PATCH_ACCEPTED" && event.final,
      isInterruptedDraft: ({ event }) => event.type === "DRAFT" && event.ending !== "complete",
    },
    actions: {
      keepDiscarded: assign({ discarded: ({ context, event }) => [...context.discarded, draftId(event)] }),
      countSteer: assign({ steers: ({ context }) => context.steers + 1 }),
      // Host actions: the runtime supplies them (`provide`); these stand-ins emit what they stand for.
      /** Records on the branch that an unresolved draft was discarded (not the answer). */
      recordUnresolvedDraft: emit(({ event }) => discardedDraft("unresolved", event)),
      /** Records on the branch that an interrupted draft was discarded. */
      recordInterruptedDraft: emit(({ event }) => discardedDraft("interrupted", event)),
      /** Sends the hidden same-run instruction that answers an unresolved draft. */
      steerHiddenSameRun: emit(
        (_, params: { attempt: number }) => ({ type: "resolution.steer", attempt: params.attempt }) as const,
      ),
      /** Says the answer was not accepted after the whole budget. */
      reportExhausted: emit(
        (_, params: { attempts: number }) => ({ type: "resolution.exhausted", attempts: params.attempts }) as const,
      ),
      keepCandidate: assign({ candidate: ({ event }) => (event.type === "DRAFT" ? (event.text ?? "") : null) }),
      /** Says the store refused the response commit, with its error. */
      reportCommitFailed: emit(({ event }) => ({
        type: "resolution.commitFailed" as const,
        error:
          event.type === "xstate.error.actor.commit"
            ? event.error instanceof Error
              ? event.error.message
              : String(event.error)
            : "",
      })),
    },
  }).createMachine({
    id: "resolution",
    context: { candidate: null, discarded: [], steers: 0 },
    // The machine's output: the final state's verdict, with the drafts discarded on the way.
    output: ({ context, event }) => ({
      accepted: (event as unknown as { output: { accepted: boolean } }).output.accepted,
      discarded: context.discarded,
    }),
    initial: "ineligible",
    states: {
      ineligible: {
        description: "No final:true latched in this run: a complete visible draft is not a response.",
        initial: "fresh",
        on: {
          PATCH_ACCEPTED: [{ guard: "isFinalPatch", target: "eligible" }, {}],
          FINAL_ONLY: { target: "eligible" },
          PATCH_REJECTED: {},
        },
        states: ladder as never,
      },
      eligible: {
        description: "final:true latched for the next accepted turn_end; tools and later patches still allowed.",
        on: {
          PATCH_ACCEPTED: {},
          FINAL_ONLY: {},
          PATCH_REJECTED: {},
          DRAFT: [
            { guard: "isInterruptedDraft", actions: ["keepDiscarded", "recordInterruptedDraft"] },
            { target: "candidate", actions: ["keepCandidate"] },
          ],
        },
      },
      candidate: {
        description: "An eligible complete draft awaits turn_end.",
        on: {
          TURN_END: { target: "committing" },
        },
      },
      committing: {
        description: "turn_end came: the candidate's text is being committed to response as a transition.",
        invoke: {
          id: "commit",
          src: "commitResponse",
          input: ({ context }) => ({ text: context.candidate ?? "" }),
          onDone: { target: "accepted" },
          onError: { target: "uncommitted", actions: ["reportCommitFailed"] },
        },
      },
      accepted: {
        type: "final",
        description: "The answer was committed to response as a transition at turn_end.",
        output: { accepted: true },
      },
      uncommitted: {
        type: "final",
        description: "The store refused the response commit: the error is said, response unchanged, nothing accepted.",
        output: { accepted: false },
      },
      exhausted: {
        type: "final",
        description:
          "Unresolved attempt past the budget: one concise error; committed state and enablement kept; steering ends.",
        output: { accepted: false },
      },
    },
  });
}

export const resolutionMachine = createResolutionMachine(MAX_RESOLUTION_STEERS);

export type ResolutionSnapshot = SnapshotFrom<typeof resolutionMachine>;

export function isTerminalEligible(s: ResolutionSnapshot): boolean {
  return s.matches("eligible") || s.matches("candidate") || s.matches("committing");
}
/** True once the run's answer is committed to response. */
export function isResponseCommitted(s: ResolutionSnapshot): boolean {
  return s.matches("accepted");
}
/** Hidden steers issued so far in this answer, whatever state it is in now (eligible included). */
export function steersUsed(s: ResolutionSnapshot): number {
  return s.context.steers;
}
/** Steering is over for this answer (accepted, uncommitted or exhausted). */
export function isResolutionSettled(s: ResolutionSnapshot): boolean {
  return s.status === "done";
}
