// Run framing: which of Pi's events belong to one user run. Pi announces a run it starts for a
// prompt with before_agent_start and then reports that prompt as the run's first user message; a
// message another extension sends with triggerTurn starts a run in Pi 0.84 with agent_start alone,
// and the next custom message is the one that started it. Inside an open run, later agent_starts are
// its continuations (retries, queued messages) and user messages are additions to the run's
// specification; agent_settled ends it. The Pi adapter sends these events and carries out what the
// machine emits, so no latch of its own decides what an event means.
import { setup, emit, type SnapshotFrom } from "xstate";

export type RunFramingEvent =
  | { type: "ANNOUNCED"; prompt: boolean }
  | { type: "AGENT_START" }
  | { type: "USER_MESSAGE"; text: string }
  | { type: "CUSTOM_MESSAGE"; customType: string; ownAnchor: boolean }
  | { type: "SETTLED" };

export type RunFramingEmitted =
  { type: "run.unannounced" } | { type: "run.userMessage"; text: string } | { type: "run.source"; source: string };

/** Whether a run is open: announced, or started by an agent_start, and not yet settled. */
export function isRunOpen(s: RunFramingSnapshot): boolean {
  return s.matches("open");
}

const userText = (event: RunFramingEvent): string => (event.type === "USER_MESSAGE" ? event.text : "");
const customType = (event: RunFramingEvent): string => (event.type === "CUSTOM_MESSAGE" ? event.customType : "");

export const runFramingMachine = setup({
  types: { events: {} as RunFramingEvent, emitted: {} as RunFramingEmitted },
  guards: {
    announcesPrompt: ({ event }) => event.type === "ANNOUNCED" && event.prompt,
    isOwnAnchor: ({ event }) => event.type === "CUSTOM_MESSAGE" && event.ownAnchor,
  },
  actions: {
    startUnannounced: emit({ type: "run.unannounced" } as const),
    addUserMessage: emit(({ event }) => ({ type: "run.userMessage", text: userText(event) }) as const),
    nameSource: emit(({ event }) => ({ type: "run.source", source: customType(event) }) as const),
  },
}).createMachine({
  id: "runFraming",
  initial: "idle",
  on: {
    ANNOUNCED: [{ guard: "announcesPrompt", target: ".open.awaitingPrompt" }, { target: ".open.framed" }],
  },
  states: {
    idle: {
      description: "No run is open: messages belong to no run.",
      on: { AGENT_START: { target: "open.awaitingSource", actions: ["startUnannounced"] } },
    },
    open: {
      description: "A run is open until agent_settled; a further agent_start continues it.",
      initial: "framed",
      on: { SETTLED: { target: "idle" } },
      states: {
        awaitingPrompt: {
          description: "Announced for a prompt: the next user message is that prompt, not an addition.",
          on: { USER_MESSAGE: { target: "framed" } },
        },
        awaitingSource: {
          description: "Started by agent_start alone: the next custom message names what started it.",
          on: {
            USER_MESSAGE: { actions: ["addUserMessage"] },
            CUSTOM_MESSAGE: [
              { guard: "isOwnAnchor", target: "framed" },
              { target: "framed", actions: ["nameSource"] },
            ],
          },
        },
        framed: {
          description: "The run's start is known: each user message is added to its specification.",
          on: { USER_MESSAGE: { actions: ["addUserMessage"] } },
        },
      },
    },
  },
});

export type RunFramingSnapshot = SnapshotFrom<typeof runFramingMachine>;
