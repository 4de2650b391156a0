// Run machine: one Pi run, from its start to agent_settled, with every retry and queued message Pi
// runs inside it. Pure. The episode (M1) spawns one actor per run and says whether it is equipped
// (the branch enabled and State Flow's tools active); the run then owns what the run is:
//   - framing: which of Pi's events belong to it. Pi announces a run it starts for a prompt with
//     before_agent_start and then reports that prompt as the run's first user message; a message
//     another extension sends with triggerTurn starts a run in Pi 0.84 with agent_start alone, and
//     the next custom message is the one that started it. Later user messages are additions to the
//     run's specification;
//   - the specification (the user's request this run works toward) and the drafts it discarded;
//   - its preparation, awaited before the run's first context: first the newest shared state (an
//     invoked actor adopts the global and cwd streams other sessions published since this branch
//     read them, unless the branch was restored to a past point, which keeps its selected past),
//     then its Knowledge discovery (an invoked actor). In that order, so that discovery's own
//     transitions (vanished sources) build on the adopted state;
//   - its answers: each is resolved by an invoked resolution actor (M2). A user message after an
//     answer was resolved asks for another answer, so it gets a fresh resolution.
// SETTLED ends the run; its output (was an answer accepted, the specification it leaves: the
// request stays open unless the run's newest answer was accepted) is what the episode keeps: a
// bootstrap ends on it, the next run a message starts continues the request, and the next prompt
// keeps an open request as an interrupted one (machines/specification.ts).
import { setup, assign, forwardTo, fromPromise, type DoneActorEvent, type ErrorActorEvent } from "xstate";
import type { ActorRefFrom, SnapshotFrom } from "xstate";
import { resolutionMachine, type ResolutionEvent, type ResolutionOutput } from "./resolution.ts";
import {
  NO_SPECIFICATION,
  specificationAfterRun,
  specificationForRun,
  withRunSource,
  withUserMessage,
  type RunTrigger,
  type Specification,
} from "./specification.ts";

/** How the run began: announced (a prompt, or a message Pi named), or by agent_start alone. */
export type RunOpening = RunTrigger | { readonly kind: "unannounced" };

export interface RunInput {
  opening: RunOpening;
  /** The branch is enabled and State Flow's tools are active: the run is resolved and projected. */
  equipped: boolean;
  /** The specification the previous run left (a run a message starts continues it). */
  specification: Specification;
}

/** A shared scope another session moved since this branch last read it: what the run's context says of it. */
export interface SharedMove {
  scope: "global" | "cwd";
  /** Transitions in the scope's retained tail that this branch had not read (0: folded or replaced wholesale). */
  transitions: number;
  /** The newest of the scope's transitions now (its identity and step in the lineage that wrote it). */
  newest: { id: string; step: number } | null;
  /** Paths (`section.key`, or `response`) the move added, changed and removed. */
  added: string[];
  changed: string[];
  removed: string[];
}

/** What the run's shared-state check found (the runtime context says it; `unavailable` is never a clean answer). */
export type Freshness =
  /** Not checked: an ordinary run, or the check has not finished. */
  | { kind: "unchecked" }
  /** Nothing moved since the branch read the shared scopes. */
  | { kind: "current" }
  /** Other sessions' changes were adopted (at a fresh proven origin when they left the branch's lineage). */
  | { kind: "adopted"; moved: SharedMove[] }
  /** The branch is restored to a past point (its session layer is not the newest): it keeps its selected past. */
  | { kind: "selectedPast" }
  | { kind: "unavailable"; reason: string };

export interface RunContext {
  opening: RunOpening;
  equipped: boolean;
  specification: Specification;
  /** The drafts earlier answers of this run discarded (the current answer's are in its resolution). */
  discarded: readonly number[];
  /** An answer of this run became response. */
  accepted: boolean;
  /** The run's newest answer became response (false again once a user message asks for another). */
  answered: boolean;
  freshness: Freshness;
  /** The newest patch_state refusal of this run, in its own words (null: none): why an answer could not be recorded. */
  refusal: string | null;
}

/** What the run's adapter reports, and the resolution's events it forwards. */
export type RunEvent =
  | { type: "USER_MESSAGE"; text: string }
  | { type: "CUSTOM_MESSAGE"; customType: string; ownAnchor: boolean }
  | { type: "AGENT_START" }
  | { type: "SETTLED" }
  | ResolutionEvent;

export type RunMachineEvent =
  | RunEvent
  | DoneActorEvent<ResolutionOutput, "resolution">
  | DoneActorEvent<Freshness, "freshness">
  | ErrorActorEvent<unknown, "freshness">
  | DoneActorEvent<void, "knowledge">
  | ErrorActorEvent<unknown, "knowledge">;

/** The run's outcome: whether an answer became response, and the specification it leaves. */
export interface RunOutput {
  accepted: boolean;
  specification: Specification;
}

const notProvided = (name: string) => async (): Promise<never> => {
  throw new Error(`run actor ${name} is supplied by the runtime (provide)`);
};

export const runMachine = setup({
  types: {
    context: {} as RunContext,
    events: {} as RunMachineEvent,
    input: {} as RunInput,
    output: {} as RunOutput,
  },
  actors: {
    resolution: resolutionMachine,
    /** Supplied by the runtime (`provide`): adopts the shared scopes other sessions moved, unless at a past point. */
    refreshShared: fromPromise<Freshness>(notProvided("refreshShared")),
    /** Supplied by the runtime (`provide`): discovers the run's Knowledge and removes vanished sources' artifacts. */
    discoverKnowledge: fromPromise<void>(notProvided("discoverKnowledge")),
  },
  guards: {
    equipped: ({ context }) => context.equipped,
    openedByPrompt: ({ context }) => context.opening.kind === "prompt",
    openedUnannounced: ({ context }) => context.opening.kind === "unannounced",
    isOwnAnchor: ({ event }) => event.type === "CUSTOM_MESSAGE" && event.ownAnchor,
  },
  actions: {
    addUserMessage: assign({
      specification: ({ context, event }) =>
        event.type === "USER_MESSAGE" ? withUserMessage(context.specification, event.text) : context.specification,
    }),
    nameSource: assign({
      specification: ({ context, event }) =>
        event.type === "CUSTOM_MESSAGE"
          ? withRunSource(context.specification, event.customType)
          : context.specification,
    }),
    toResolution: forwardTo("resolution"),
    keepAnswer: assign(({ context, event }) => {
      if (event.type !== "xstate.done.actor.resolution") return {};
      return {
        accepted: context.accepted || event.output.accepted,
        answered: event.output.accepted,
        discarded: [...context.discarded, ...event.output.discarded],
      };
    }),
    askAgain: assign({ answered: false }),
    clearRefusal: assign({ refusal: null }),
    keepRefusal: assign({
      refusal: ({ context, event }) =>
        event.type === "PATCH_REJECTED" ? (event.reason ?? "(no reason given)") : context.refusal,
    }),
    keepFreshness: assign({
      freshness: ({ context, event }) =>
        event.type === "xstate.done.actor.freshness" ? event.output : context.freshness,
    }),
    freshnessUnavailable: assign({
      freshness: ({ context, event }) =>
        event.type === "xstate.error.actor.freshness"
          ? { kind: "unavailable" as const, reason: errorText(event.error) }
          : context.freshness,
    }),
    /** Host action (provided): says the shared-state check failed; the run goes on with the state it had. */
    reportFreshnessFailed: () => undefined,
    /** Host action (provided): says discovery failed; the run goes on with its plan unavailable. */
    reportKnowledgeFailed: () => undefined,
  },
}).createMachine({
  id: "run",
  context: ({ input }) => ({
    opening: input.opening,
    equipped: input.equipped,
    // Only an equipped run is the user's request State Flow works toward; an ordinary run leaves it alone.
    specification: input.equipped ? openingSpecification(input) : input.specification,
    discarded: [],
    accepted: false,
    answered: false,
    freshness: { kind: "unchecked" },
    refusal: null,
  }),
  output: ({ context }) => ({
    accepted: context.accepted,
    // An ordinary run leaves the request alone; an equipped one leaves it open unless its newest answer was accepted.
    specification: context.equipped
      ? specificationAfterRun(context.specification, context.answered)
      : context.specification,
  }),
  initial: "open",
  states: {
    open: {
      description: "The run is open until agent_settled; a further agent_start continues it.",
      type: "parallel",
      on: { SETTLED: { target: "ended" } },
      states: {
        framing: {
          description: "Which of Pi's events belong to the run and what each one means.",
          initial: "opening",
          states: {
            opening: {
              description: "The run's first step: how it began says what its next message is.",
              always: [
                { guard: "openedByPrompt", target: "awaitingPrompt" },
                { guard: "openedUnannounced", target: "awaitingSource" },
                { target: "framed" },
              ],
            },
            awaitingPrompt: {
              description: "Announced for a prompt: the next user message is that prompt, not an addition.",
              on: { USER_MESSAGE: { target: "framed" } },
            },
            awaitingSource: {
              description: "Started by agent_start alone: the next custom message names what started it.",
              on: {
                USER_MESSAGE: [{ guard: "equipped", actions: ["addUserMessage"] }, {}],
                CUSTOM_MESSAGE: [
                  { guard: "isOwnAnchor", target: "framed" },
                  { guard: "equipped", target: "framed", actions: ["nameSource"] },
                  { target: "framed" },
                ],
              },
            },
            framed: {
              description: "The run's start is known: each user message is added to its specification.",
              on: { USER_MESSAGE: [{ guard: "equipped", actions: ["addUserMessage"] }, {}] },
            },
          },
        },
        answer: {
          description: "The run's answers: each one an invoked resolution (M2).",
          initial: "opening",
          states: {
            opening: {
              description: "An equipped run owes an answer; an ordinary one is Pi's alone.",
              always: [{ guard: "equipped", target: "resolving" }, { target: "ordinary" }],
            },
            ordinary: {
              description: "Not equipped (State Flow off, or its tools not active): no resolution, no projection.",
            },
            resolving: {
              description: "One answer is being resolved: patch outcomes, drafts and turn_end go to its resolution.",
              invoke: {
                id: "resolution",
                src: "resolution",
                onDone: { target: "resolved", actions: ["keepAnswer"] },
              },
              on: {
                PATCH_ACCEPTED: { actions: ["toResolution", "clearRefusal"] },
                FINAL_ONLY: { actions: ["toResolution", "clearRefusal"] },
                PATCH_REJECTED: { actions: ["toResolution", "keepRefusal"] },
                DRAFT: { actions: ["toResolution"] },
                TURN_END: { actions: ["toResolution"] },
              },
            },
            resolved: {
              description: "The answer was accepted, refused by the store or exhausted: steering is over for it.",
              // A user message after the answer asks for another one (an addition: the prompt comes first).
              on: { USER_MESSAGE: { target: "resolving", actions: ["askAgain"] } },
            },
          },
        },
        preparation: {
          description:
            "What the run's first context needs, awaited before it: the newest shared state, then Knowledge.",
          initial: "opening",
          states: {
            opening: {
              description: "Only an equipped run is prepared.",
              always: [{ guard: "equipped", target: "refreshing" }, { target: "none" }],
            },
            none: { description: "An ordinary run: no shared-state check, no discovery." },
            refreshing: {
              description:
                "The shared scopes other sessions moved are adopted (one read of each scope's record); a branch " +
                "restored to a past point keeps its selected past.",
              invoke: {
                id: "freshness",
                src: "refreshShared",
                onDone: { target: "discovering", actions: ["keepFreshness"] },
                onError: { target: "discovering", actions: ["freshnessUnavailable", "reportFreshnessFailed"] },
              },
            },
            discovering: {
              description: "Knowledge discovery, on the adopted state (never on the activation path).",
              invoke: {
                id: "knowledge",
                src: "discoverKnowledge",
                onDone: { target: "ready" },
                onError: { target: "ready", actions: ["reportKnowledgeFailed"] },
              },
            },
            ready: { description: "Prepared: the run's first context may be built." },
          },
        },
      },
    },
    ended: {
      type: "final",
      description: "agent_settled: the run is over; an answer still being resolved ends unaccepted.",
    },
  },
});

function openingSpecification(input: RunInput): Specification {
  const { opening, specification } = input;
  // A run agent_start alone began is a message's run whose source its next custom message names.
  const trigger: RunTrigger = opening.kind === "unannounced" ? { kind: "message", source: null } : opening;
  return specificationForRun(specification ?? NO_SPECIFICATION, trigger);
}

export type RunSnapshot = SnapshotFrom<typeof runMachine>;

/** The run's current answer's resolution actor, while one is being resolved. */
export function runResolution(s: RunSnapshot): ActorRefFrom<typeof resolutionMachine> | undefined {
  return s.children.resolution as ActorRefFrom<typeof resolutionMachine> | undefined;
}
/** Every draft the run discarded so far, its current answer's included. */
export function runDiscarded(s: RunSnapshot): ReadonlySet<number> {
  const current = runResolution(s)?.getSnapshot().context.discarded ?? [];
  return new Set([...s.context.discarded, ...current]);
}
/** The run's preparation is over (or the run prepares nothing, or has ended): its first context may be built. */
export function isPrepared(s: RunSnapshot): boolean {
  return (
    s.status !== "active" ||
    (!s.matches({ open: { preparation: "refreshing" } }) && !s.matches({ open: { preparation: "discovering" } }))
  );
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
