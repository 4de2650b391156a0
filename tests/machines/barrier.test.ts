import { describe, expect, it } from "vitest";
import { createActor, type AnyMachineSnapshot } from "xstate";
import fc from "fast-check";
import { barrierMachine, toolCallDecision, PATCH_TOOL, type BarrierEvent, type BarrierContext, type ToolCallRef } from "../../machines/barrier.ts";
import { flattenValue } from "../../machines/episode.ts";
import {
  assertFullCoverage,
  formatReport,
  UncoveredTransitionsError,
  runPathSuite,
  type StepInfo,
} from "../../machines/graph.ts";

const batch = (...names: string[]): ToolCallRef[] => names.map((name, i) => ({ id: `c${i}`, name }));
const batches = [
  batch(),
  batch("bash"),
  batch("bash", "edit"),
  batch(PATCH_TOOL),
  batch(PATCH_TOOL, "read_state"),
  batch("read_state", PATCH_TOOL),
  batch(PATCH_TOOL, PATCH_TOOL),
  batch("bash", PATCH_TOOL, "edit"),
];
function eventsFor(s: AnyMachineSnapshot): BarrierEvent[] {
  const c = s.context as BarrierContext;
  return [
    ...batches.map((calls) => ({ type: "BATCH", calls }) as const),
    ...c.calls.map((call) => ({ type: "TOOL_CALL", id: call.id }) as const),
    { type: "BATCH_END" },
  ];
}
// Simple paths use two representative batches (one per guarded branch); edge tours use all.
function simpleEventsFor(s: AnyMachineSnapshot): BarrierEvent[] {
  return eventsFor(s).filter((e) => e.type !== "BATCH" || e.calls === batches[1] || e.calls === batches[4]);
}
const serializeState = (s: AnyMachineSnapshot) => JSON.stringify([s.value, (s.context as BarrierContext).calls.map((c) => c.name)]);

export function checkBarrierStep(step: StepInfo<BarrierEvent>): string[] {
  const v: string[] = [];
  const { event, next, emitted } = step;
  const c = next.context as BarrierContext;
  const state = flattenValue(next.value);
  const hasPatch = c.calls.some((x) => x.name === PATCH_TOOL);
  if (event.type === "BATCH") {
    const allowed = c.calls.filter((x) => !toolCallDecision(next as never, x.id).block);
    if (hasPatch) {
      // I4.1
      const first = c.calls.find((x) => x.name === PATCH_TOOL)!;
      if (allowed.length !== 1 || allowed[0]!.id !== first.id)
        v.push(`I4.1 batch ${c.calls.map((x) => x.name).join(",")} allows ${allowed.map((x) => x.id).join(",")}`);
      // I4.2
      for (const x of c.calls) {
        const d = toolCallDecision(next as never, x.id);
        if (x.id !== first.id && (!d.block || !d.reason.includes("patch_state"))) v.push(`I4.2 sibling ${x.name} not blocked with a reason`);
      }
    } else if (allowed.length !== c.calls.length) v.push("I4.3 a batch without patch_state blocked a call"); // I4.3
  }
  if (event.type === "TOOL_CALL") {
    const d = toolCallDecision(next as never, event.id);
    const out = emitted.find((e) => e.type === "barrier.allow" || e.type === "barrier.block");
    if (step.prev.matches("idle")) {
      if (out) v.push("I4.4 a call outside any batch was decided");
    } else if (!out || (out.type === "barrier.block") !== d.block) v.push(`I4.2 emitted decision disagrees with toolCallDecision for ${event.id}`);
  }
  // I4.4
  if (event.type === "BATCH_END" && (state !== "idle" || c.calls.length || c.barrierCallId)) v.push("I4.4 batch decisions leaked past BATCH_END");
  if (state === "exclusive" !== hasPatch && state !== "idle") v.push(`I4.4 state ${state} disagrees with batch contents`);
  return v;
}

function runSuite(machine: typeof barrierMachine) {
  return runPathSuite<BarrierEvent, null>(machine, {
    spec: () => ({ events: eventsFor, simpleEvents: simpleEventsFor, serializeState, maxSimplePaths: 5_000 }),
    trace: () => null,
    check: (step) => checkBarrierStep(step),
  });
}

describe("barrier machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(barrierMachine);
  console.log(formatReport(report) + ` steps=${steps}`);
  it("I4.1–I4.4 hold after every step of every shortest, simple and edge path", () => {
    expect(violations, violations.join("\n")).toEqual([]);
  });
  it("covers 100% of transitions", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
});

describe("barrier negative controls", () => {
  it("I4.1 check catches a barrier that lets read_state run beside patch_state", () => {
    const leaky = barrierMachine.provide({ guards: { containsPatchState: () => false } });
    const { violations, report } = runSuite(leaky);
    expect(violations.some((v) => v.startsWith("I4.1"))).toBe(true);
    expect(() => assertFullCoverage(report)).toThrow(UncoveredTransitionsError);
  });
});

describe("barrier property", () => {
  it("I4.1 I4.2 I4.3 for arbitrary batches: exactly the first patch_state runs, siblings blocked with a reason", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(PATCH_TOOL, "read_state", "bash", "edit"), { maxLength: 6 }), (names) => {
        const calls = batch(...names);
        const a = createActor(barrierMachine).start();
        a.send({ type: "BATCH", calls });
        const allowed = calls.filter((c) => !toolCallDecision(a.getSnapshot(), c.id).block).map((c) => c.id);
        const first = calls.find((c) => c.name === PATCH_TOOL);
        expect(allowed, "I4.1/I4.3 allowed set").toEqual(first ? [first.id] : calls.map((c) => c.id));
        a.stop();
      }),
      { numRuns: 300 },
    );
  });
});
