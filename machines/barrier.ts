// patch_state inference barrier (spec 001 "Unified semantic mutation"): per assistant batch,
// exactly one patch_state executes and every sibling tool call (read_state and a second
// patch_state included) is blocked before execution. A batch without patch_state passes through.
// The allow/block decision lives in one pure function, `decide`, used by both the machine (guard
// `callAllowed`, action `blockCall`) and the adapter's query `toolCallDecision`.
import { setup, assign, emit, type SnapshotFrom } from "xstate";

export const PATCH_TOOL = "patch_state";

export interface ToolCallRef {
  id: string;
  name: string;
}
export type BarrierEvent =
  { type: "BATCH"; calls: readonly ToolCallRef[] } | { type: "TOOL_CALL"; id: string } | { type: "BATCH_END" };
export type BarrierEmitted =
  { type: "barrier.allow"; id: string } | { type: "barrier.block"; id: string; reason: string };
export type BarrierDecision = { block: false } | { block: true; reason: string };

export interface BarrierContext {
  /** The current assistant batch (empty in `idle`). */
  calls: readonly ToolCallRef[];
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

/**
 * The one allow/block decision: in a batch holding patch_state only its first patch_state call is
 * allowed and every other id (siblings, a second patch_state, an id outside the batch) is blocked;
 * a batch without patch_state (or no batch) allows everything.
 */
export function decide(context: BarrierContext, id: string): BarrierDecision {
  const barrier = barrierCallOf(context.calls);
  if (barrier === null || id === barrier) return { block: false };
  return { block: true, reason: blockReason(context.calls.find((c) => c.id === id)) };
}

/** Decision for one tool call under the current batch (pure query for the adapter's tool_call hook). */
export function toolCallDecision(s: BarrierSnapshot, id: string): BarrierDecision {
  return decide(s.context, id);
}

/** Whether a tool call id belongs to the batch the barrier currently holds (false in `idle`). */
export function inCurrentBatch(s: BarrierSnapshot, id: string): boolean {
  return s.context.calls.some((c) => c.id === id);
}

const toolCallId = (event: BarrierEvent): string => (event.type === "TOOL_CALL" ? event.id : "");

export const barrierMachine = setup({
  types: { context: {} as BarrierContext, events: {} as BarrierEvent, emitted: {} as BarrierEmitted },
  guards: {
    batchHasPatchState: ({ event }) => event.type === "BATCH" && barrierCallOf(event.calls) !== null,
    callAllowed: ({ context, event }) => !decide(context, toolCallId(event)).block,
  },
  actions: {
    recordBatch: assign({ calls: ({ event }) => (event.type === "BATCH" ? event.calls : []) }),
    clearBatch: assign({ calls: () => [] }),
    allowCall: emit(({ event }) => ({ type: "barrier.allow", id: toolCallId(event) }) as const),
    blockCall: emit(({ context, event }) => {
      const id = toolCallId(event);
      const d = decide(context, id);
      return { type: "barrier.block", id, reason: d.block ? d.reason : blockReason(undefined) } as const;
    }),
  },
}).createMachine({
  id: "barrier",
  context: { calls: [] },
  initial: "idle",
  on: {
    BATCH: [
      { guard: "batchHasPatchState", target: ".exclusive", actions: ["recordBatch"] },
      { target: ".passThrough", actions: ["recordBatch"] },
    ],
  },
  states: {
    idle: { description: "No assistant tool batch in progress: tool calls are not decided." },
    exclusive: {
      description: "The batch holds patch_state: only its first patch_state call runs.",
      on: {
        TOOL_CALL: [{ guard: "callAllowed", actions: ["allowCall"] }, { actions: ["blockCall"] }],
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
