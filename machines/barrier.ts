// patch_state inference barrier (spec 001 "Unified semantic mutation"): per assistant batch,
// exactly one patch_state executes and every sibling tool call (read_state and a second
// patch_state included) is blocked before execution. A batch without patch_state passes through.
import { setup, assign, emit, type SnapshotFrom } from "xstate";

export const PATCH_TOOL = "patch_state";

export interface ToolCallRef {
  id: string;
  name: string;
}
export type BarrierEvent =
  | { type: "BATCH"; calls: readonly ToolCallRef[] }
  | { type: "TOOL_CALL"; id: string }
  | { type: "BATCH_END" };
export type BarrierEmitted =
  | { type: "barrier.allow"; id: string }
  | { type: "barrier.block"; id: string; reason: string };

export interface BarrierContext {
  calls: readonly ToolCallRef[];
  /** The one patch_state call allowed in an exclusive batch. */
  barrierCallId: string | null;
}

/** The first patch_state call of a batch, or null when the batch holds none. */
export function barrierCallOf(calls: readonly ToolCallRef[]): string | null {
  return calls.find((c) => c.name === PATCH_TOOL)?.id ?? null;
}

export function blockReason(call: ToolCallRef | undefined): string {
  const what = call?.name === PATCH_TOOL ? "a second patch_state call" : `${call?.name ?? "this tool"}`;
  return (
    `Blocked: ${what} cannot run in the same assistant batch as patch_state. patch_state is an inference ` +
    `barrier and executes alone; issue this call again after the state update is applied.`
  );
}

/** Decision for one tool call under the current batch (pure query for the adapter's tool_call hook). */
export function toolCallDecision(s: BarrierSnapshot, id: string): { block: false } | { block: true; reason: string } {
  if (!s.matches("exclusive")) return { block: false };
  if (id === s.context.barrierCallId) return { block: false };
  return { block: true, reason: blockReason(s.context.calls.find((c) => c.id === id)) };
}

export const barrierMachine = setup({
  types: { context: {} as BarrierContext, events: {} as BarrierEvent, emitted: {} as BarrierEmitted },
  guards: {
    containsPatchState: ({ context }) => context.barrierCallId !== null,
    isBarrierCall: ({ context, event }) => event.type === "TOOL_CALL" && event.id === context.barrierCallId,
  },
  actions: {
    recordBatch: assign({
      calls: ({ event }) => (event.type === "BATCH" ? event.calls : []),
      barrierCallId: ({ event }) => (event.type === "BATCH" ? barrierCallOf(event.calls) : null),
    }),
    clearBatch: assign({ calls: () => [], barrierCallId: () => null }),
    allowCall: emit(({ event }) => ({ type: "barrier.allow", id: event.type === "TOOL_CALL" ? event.id : "" }) as const),
    blockCall: emit(({ context, event }) => {
      const id = event.type === "TOOL_CALL" ? event.id : "";
      return { type: "barrier.block", id, reason: blockReason(context.calls.find((c) => c.id === id)) } as const;
    }),
  },
}).createMachine({
  id: "barrier",
  context: { calls: [], barrierCallId: null },
  initial: "idle",
  on: { BATCH: { target: ".deciding", actions: ["recordBatch"] } },
  states: {
    idle: { description: "No assistant tool batch in progress." },
    deciding: {
      description: "A finalized assistant batch arrived: does it hold patch_state?",
      always: [{ guard: "containsPatchState", target: "exclusive" }, { target: "passThrough" }],
    },
    exclusive: {
      description: "The batch holds patch_state: only its first patch_state call runs.",
      on: {
        TOOL_CALL: [{ guard: "isBarrierCall", actions: ["allowCall"] }, { actions: ["blockCall"] }],
        BATCH_END: { target: "idle", actions: ["clearBatch"] },
      },
    },
    passThrough: {
      description: "No patch_state in the batch: every call runs.",
      on: {
        TOOL_CALL: { actions: ["allowCall"] },
        BATCH_END: { target: "idle", actions: ["clearBatch"] },
      },
    },
  },
});

export type BarrierSnapshot = SnapshotFrom<typeof barrierMachine>;
