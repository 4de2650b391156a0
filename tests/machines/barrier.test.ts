import { describe, expect, it } from "vitest";
import { assign, createActor, createMachine, emit, type AnyMachineSnapshot, type AnyStateMachine } from "xstate";
import fc from "fast-check";
import {
  barrierMachine,
  decide,
  inCurrentBatch,
  toolCallDecision,
  PATCH_TOOL,
  type BarrierContext,
  type BarrierEvent,
  type BarrierSnapshot,
  type ToolCallRef,
} from "../../machines/barrier.ts";
import { flattenValue } from "../../machines/state-value.ts";
import {
  assertFullCoverage,
  formatReport,
  UncoveredTransitionsError,
  runPathSuite,
  type StepInfo,
} from "../../machines/graph.ts";
import { expectCheckFires } from "../support/negative-control.ts";

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
/** A tool call id that belongs to no batch: makes "a call outside a batch is not decided" (I4.4) checkable. */
const STRAY = "stray";
function eventsFor(s: AnyMachineSnapshot): BarrierEvent[] {
  const c = s.context as BarrierContext;
  return [
    ...batches.map((calls) => ({ type: "BATCH", calls }) as const),
    ...c.calls.map((call) => ({ type: "TOOL_CALL", id: call.id }) as const),
    { type: "TOOL_CALL", id: STRAY },
    { type: "BATCH_END" },
  ];
}
// Simple paths use two representative batches (one per guarded branch); edge tours use all.
function simpleEventsFor(s: AnyMachineSnapshot): BarrierEvent[] {
  return eventsFor(s).filter((e) => e.type !== "BATCH" || e.calls === batches[1] || e.calls === batches[4]);
}
const serializeState = (s: AnyMachineSnapshot) =>
  JSON.stringify([s.value, (s.context as BarrierContext).calls.map((c) => c.name)]);

/**
 * Per-path oracle state: the batch as the test sent it (null outside a batch), independent of the machine's
 * context.
 */
interface BatchTrace {
  calls: readonly ToolCallRef[] | null;
}

export function checkBarrierStep(step: StepInfo<BarrierEvent>, trace: BatchTrace): string[] {
  const v: string[] = [];
  const { event, next, emitted } = step;
  const snap = next as BarrierSnapshot;
  if (event.type === "BATCH") trace.calls = event.calls;
  if (event.type === "BATCH_END") trace.calls = null;
  const calls = trace.calls ?? [];
  const first = calls.find((x) => x.name === PATCH_TOOL);
  const state = flattenValue(next.value);

  if (event.type === "BATCH") {
    const allowed = calls.filter((x) => !toolCallDecision(snap, x.id).block);
    if (first) {
      // I4.1
      if (allowed.length !== 1 || allowed[0]!.id !== first.id)
        v.push(`I4.1 batch ${calls.map((x) => x.name).join(",")} allows ${allowed.map((x) => x.id).join(",")}`);
      // I4.2
      for (const x of calls) {
        const d = toolCallDecision(snap, x.id);
        if (x.id !== first.id && (!d.block || !d.reason.includes("patch_state")))
          v.push(`I4.2 sibling ${x.name} not blocked with a reason`);
      }
    } else if (allowed.length !== calls.length) v.push("I4.3 a batch without patch_state blocked a call"); // I4.3
  }

  if (event.type === "TOOL_CALL") {
    const out = emitted.find((e) => e.type === "barrier.allow" || e.type === "barrier.block");
    const d = toolCallDecision(snap, event.id);
    if (trace.calls === null) {
      // I4.4
      if (out) v.push(`I4.4 call ${event.id} outside any batch was decided (${out.type})`);
      if (d.block) v.push(`I4.4 toolCallDecision blocks ${event.id} outside any batch`);
    } else if (!out) v.push(`I4.2 call ${event.id} inside a batch was not decided`);
    else {
      const blocked = out.type === "barrier.block";
      const reason = blocked ? String((out as { reason?: unknown }).reason) : "";
      const name = calls.find((x) => x.id === event.id)?.name ?? event.id;
      if (first && !blocked && event.id !== first.id) v.push(`I4.1 ${name} ran beside patch_state`); // I4.1
      if (first && blocked && event.id === first.id) v.push(`I4.1 the first patch_state was blocked`); // I4.1
      if (first && blocked && !reason.includes("patch_state"))
        v.push(`I4.2 ${name} blocked without a reason naming patch_state`); // I4.2
      if (!first && blocked) v.push(`I4.3 ${name} blocked in a batch without patch_state`); // I4.3
      if (blocked !== d.block) v.push(`I4.2 emitted decision disagrees with toolCallDecision for ${event.id}`); // I4.2
    }
  }

  // I4.4
  if (event.type === "BATCH_END" && (state !== "idle" || (next.context as BarrierContext).calls.length))
    v.push("I4.4 batch decisions leaked past BATCH_END");
  // I4.5
  const expected = trace.calls === null ? "idle" : first ? "exclusive" : "passThrough";
  if (state !== expected) v.push(`I4.5 state ${state} disagrees with the batch (expected ${expected})`);
  for (const id of [...new Set([...calls, ...batches.flat()].map((x) => x.id)), STRAY]) {
    const member = calls.some((x) => x.id === id);
    if (inCurrentBatch(snap, id) !== member)
      v.push(`I4.5 inCurrentBatch(${id}) is ${!member} (batch ${calls.map((x) => x.id).join(",")})`);
  }
  return v;
}

function runSuite(machine: AnyStateMachine) {
  return runPathSuite<BarrierEvent, BatchTrace>(machine, {
    spec: () => ({ events: eventsFor, simpleEvents: simpleEventsFor, serializeState, maxSimplePaths: 5_000 }),
    trace: () => ({ calls: null }),
    check: (step, trace) => checkBarrierStep(step, trace),
    maxViolations: 5_000, // the negative controls look for one invariant id among all violations
  });
}

describe("barrier machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(barrierMachine);
  console.log(formatReport(report) + ` steps=${steps}`);
  it("I4.1–I4.5 hold after every step of every shortest, simple and edge path", () => {
    expect(violations, violations.join("\n")).toEqual([]);
  });
  it("covers 100% of transitions", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
  it("I4.4 the stray call is exercised outside a batch", () => {
    let strayInIdle = 0;
    runPathSuite<BarrierEvent, BatchTrace>(barrierMachine, {
      spec: () => ({ events: eventsFor, simpleEvents: simpleEventsFor, serializeState, maxSimplePaths: 5_000 }),
      trace: () => ({ calls: null }),
      check: (step) => {
        if (step.event.type === "TOOL_CALL" && step.prev.matches("idle")) strayInIdle++;
        return [];
      },
    });
    expect(strayInIdle, "I4.4 no generated step sends a TOOL_CALL in idle").toBeGreaterThan(0);
  });
});

/** The barrier with one structural change: `idle` decides tool calls (allows them). */
function decidingIdle(): AnyStateMachine {
  const config = barrierMachine.config as unknown as { states: Record<string, object> };
  return createMachine(
    { ...config, states: { ...config.states, idle: { on: { TOOL_CALL: { actions: ["allowCall"] } } } } } as never,
    barrierMachine.implementations as never,
  );
}

describe("barrier negative controls (each check can fail)", () => {
  const fails = (machine: AnyStateMachine, id: string) => expectCheckFires(runSuite(machine).violations, id);
  it("I4.1 and I4.5 catch a barrier that lets read_state run beside patch_state", () => {
    const leaky = barrierMachine.provide({ guards: { batchHasPatchState: () => false } });
    fails(leaky, "I4.1");
    fails(leaky, "I4.5");
    expect(() => assertFullCoverage(runSuite(leaky).report)).toThrow(UncoveredTransitionsError);
  });
  it("I4.1 catches a barrier that blocks the patch_state call itself", () => {
    fails(barrierMachine.provide({ guards: { callAllowed: () => false } }), "I4.1");
  });
  it("I4.2 catches a block whose reason does not name patch_state", () => {
    const mute = barrierMachine.provide({
      actions: {
        blockCall: emit(
          ({ event }) =>
            ({ type: "barrier.block", id: event.type === "TOOL_CALL" ? event.id : "", reason: "no" }) as const,
        ),
      },
    });
    fails(mute, "I4.2");
  });
  it("I4.2 catches an emitted decision that disagrees with toolCallDecision", () => {
    const silent = barrierMachine.provide({
      actions: {
        blockCall: emit(
          ({ event }) => ({ type: "barrier.allow", id: event.type === "TOOL_CALL" ? event.id : "" }) as const,
        ),
      },
    });
    const violations = fails(silent, "I4.2");
    expect(violations.some((v) => v.includes("disagrees with toolCallDecision"))).toBe(true);
  });
  it("I4.3 catches a pass-through batch that blocks", () => {
    const strict = barrierMachine.provide({
      actions: {
        allowCall: emit(
          ({ event }) =>
            ({ type: "barrier.block", id: event.type === "TOOL_CALL" ? event.id : "", reason: "patch_state" }) as const,
        ),
      },
    });
    fails(strict, "I4.3");
  });
  it("I4.4 catches a call outside any batch being decided", () => {
    const violations = fails(decidingIdle(), "I4.4");
    expect(violations.some((v) => v.includes("outside any batch was decided"))).toBe(true);
  });
  it("I4.4 catches a batch leaking past BATCH_END", () => {
    const sticky = barrierMachine.provide({ actions: { clearBatch: () => {} } });
    const violations = fails(sticky, "I4.4");
    expect(violations.some((v) => v.includes("leaked past BATCH_END"))).toBe(true);
  });
  it("I4.5 catches inCurrentBatch disagreeing with the batch sent", () => {
    const lossy = barrierMachine.provide({
      actions: { recordBatch: assign({ calls: ({ event }) => (event.type === "BATCH" ? event.calls.slice(1) : []) }) },
    });
    const violations = fails(lossy, "I4.5");
    expect(violations.some((v) => v.includes("inCurrentBatch"))).toBe(true);
  });
});

describe("barrier property", () => {
  it("I4.1 I4.2 I4.3 for arbitrary batches: exactly the first patch_state runs, siblings blocked with a reason", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(PATCH_TOOL, "read_state", "bash", "edit"), { maxLength: 6 }), (names) => {
        const calls = batch(...names);
        const a = createActor(barrierMachine).start();
        a.send({ type: "BATCH", calls });
        const decisions: Record<string, boolean> = {};
        a.on("*", (e) => void (decisions[e.id] = e.type === "barrier.block"));
        for (const c of calls) a.send({ type: "TOOL_CALL", id: c.id });
        const allowed = calls.filter((c) => !toolCallDecision(a.getSnapshot(), c.id).block).map((c) => c.id);
        const first = calls.find((c) => c.name === PATCH_TOOL);
        expect(allowed, "I4.1/I4.3 allowed set").toEqual(first ? [first.id] : calls.map((c) => c.id));
        expect(
          calls.filter((c) => !decisions[c.id]).map((c) => c.id),
          "I4.2 emitted decisions match the query",
        ).toEqual(allowed);
        expect(
          calls.every((c) => inCurrentBatch(a.getSnapshot(), c.id)),
          "I4.5 every batch call is in the current batch",
        ).toBe(true);
        expect(decide(a.getSnapshot().context, "stray").block, "I4.1 an id outside an exclusive batch is blocked").toBe(
          first !== undefined,
        );
        a.stop();
      }),
      { numRuns: 300 },
    );
  });
});
