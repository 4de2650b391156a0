// Event alphabets of the replays through a real Pi session (tests/adapters/pi/model-based-*.test.ts)
// for the machines whose path suites keep theirs local: the same shapes as tests/machines/*, with
// tool names a Pi session really has, so every allowed call has an effect the replay can see.
import type { AnyMachineSnapshot } from "xstate";
import { PATCH_TOOL, type BarrierContext, type BarrierEvent, type ToolCallRef } from "../../machines/barrier.ts";

const batch = (...names: string[]): ToolCallRef[] => names.map((name, i) => ({ id: `c${i}`, name }));

/** The barrier's batch shapes: none, without patch_state, patch_state first, last, twice and between others. */
export const BARRIER_BATCHES: readonly ToolCallRef[][] = [
  batch(),
  batch("bash"),
  batch("bash", "write"),
  batch(PATCH_TOOL),
  batch(PATCH_TOOL, "read_state"),
  batch("read_state", PATCH_TOOL),
  batch(PATCH_TOOL, PATCH_TOOL),
  batch("bash", PATCH_TOOL, "write"),
];

/** A tool call id that belongs to no batch (I4.4: a call outside a batch is not decided). */
export const STRAY_CALL = "stray";

export function barrierEvents(s: AnyMachineSnapshot): BarrierEvent[] {
  const c = s.context as BarrierContext;
  return [
    ...BARRIER_BATCHES.map((calls) => ({ type: "BATCH", calls }) as const),
    ...c.calls.map((call) => ({ type: "TOOL_CALL", id: call.id }) as const),
    { type: "TOOL_CALL", id: STRAY_CALL },
    { type: "BATCH_END" },
  ];
}

export const barrierStateKey = (s: AnyMachineSnapshot) =>
  JSON.stringify([s.value, (s.context as BarrierContext).calls.map((c) => c.name)]);
