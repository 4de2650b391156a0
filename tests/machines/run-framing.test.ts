import { describe, expect, it } from "vitest";
import { createActor, createMachine, type AnyMachineSnapshot, type AnyStateMachine } from "xstate";
import fc from "fast-check";
import {
  isRunOpen,
  runFramingMachine,
  type RunFramingEmitted,
  type RunFramingEvent,
  type RunFramingSnapshot,
} from "../../machines/run-framing.ts";
import { assertFullCoverage, runPathSuite, formatReport, type StepInfo } from "../../machines/graph.ts";
import { expectCheckFires } from "../support/negative-control.ts";

const alphabet: RunFramingEvent[] = [
  { type: "ANNOUNCED", prompt: true },
  { type: "ANNOUNCED", prompt: false },
  { type: "AGENT_START" },
  { type: "USER_MESSAGE", text: "steer" },
  { type: "CUSTOM_MESSAGE", customType: "other-extension", ownAnchor: false },
  { type: "CUSTOM_MESSAGE", customType: "state-flow-run", ownAnchor: true },
  { type: "SETTLED" },
];
const serializeState = (s: AnyMachineSnapshot) => JSON.stringify(s.value);

/**
 * The oracle: what each Pi event means, kept as the three latches an adapter would otherwise hold —
 * independent of the machine.
 */
interface FramingTrace {
  open: boolean;
  promptPending: boolean;
  sourcePending: boolean;
}

export function checkFramingStep(step: StepInfo<RunFramingEvent>, trace: FramingTrace): string[] {
  const v: string[] = [];
  const { event, next } = step;
  const emitted = step.emitted as RunFramingEmitted[];
  const started = emitted.filter((e) => e.type === "run.unannounced");
  const added = emitted.filter((e) => e.type === "run.userMessage");
  const sources = emitted.filter((e) => e.type === "run.source");
  const wasOpen = trace.open;
  let expectAdded: string | null = null;
  let expectSource: string | null = null;
  switch (event.type) {
    case "ANNOUNCED":
      Object.assign(trace, { open: true, promptPending: event.prompt, sourcePending: false });
      break;
    case "AGENT_START":
      if (!wasOpen) Object.assign(trace, { open: true, promptPending: false, sourcePending: true });
      break;
    case "USER_MESSAGE":
      if (trace.promptPending) trace.promptPending = false;
      else if (trace.open) expectAdded = event.text;
      break;
    case "CUSTOM_MESSAGE":
      if (trace.sourcePending) {
        trace.sourcePending = false;
        if (!event.ownAnchor) expectSource = event.customType;
      }
      break;
    case "SETTLED":
      Object.assign(trace, { open: false, promptPending: false, sourcePending: false });
      break;
  }
  // I5.1
  if (isRunOpen(next as RunFramingSnapshot) !== trace.open)
    v.push(`I5.1 after ${event.type} the run is ${trace.open ? "closed" : "open"}, expected the opposite`);
  if (event.type === "SETTLED" && !next.matches("idle")) v.push("I5.1 SETTLED left a run open");
  // I5.2
  const shouldStart = event.type === "AGENT_START" && !wasOpen;
  if (started.length !== (shouldStart ? 1 : 0))
    v.push(`I5.2 ${event.type} (run ${wasOpen ? "open" : "closed"}) emitted run.unannounced ${started.length}×`);
  // I5.3
  if (expectAdded === null && added.length > 0)
    v.push(`I5.3 ${event.type} reported a user message that is no addition to an open run`);
  if (expectAdded !== null && (added.length !== 1 || added[0]!.text !== expectAdded))
    v.push(`I5.3 a user message inside the run was not added to its specification`);
  // I5.4
  if (expectSource === null && sources.length > 0)
    v.push(`I5.4 ${event.type} named a source (${sources[0]!.source}) that did not start the run`);
  if (expectSource !== null && (sources.length !== 1 || sources[0]!.source !== expectSource))
    v.push(`I5.4 the custom message that started an unannounced run did not name its source`);
  return v;
}

function runSuite(machine: AnyStateMachine) {
  return runPathSuite<RunFramingEvent, FramingTrace>(machine, {
    spec: () => ({ events: () => alphabet, serializeState, maxSimplePaths: 5_000 }),
    trace: () => ({ open: false, promptPending: false, sourcePending: false }),
    check: (step, trace) => checkFramingStep(step, trace),
    maxViolations: 5_000,
  });
}

describe("run framing machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(runFramingMachine);
  console.log(formatReport(report) + ` steps=${steps}`);
  it("I5.1–I5.4 hold after every step of every shortest, simple and edge path", () => {
    expect(violations, violations.join("\n")).toEqual([]);
  });
  it("covers 100% of transitions", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
});

/** The machine with one structural change: `open` ignores SETTLED. */
function neverSettles(): AnyStateMachine {
  const config = runFramingMachine.config as unknown as { states: Record<string, Record<string, unknown>> };
  const open = { ...config.states.open, on: {} };
  return createMachine(
    { ...config, states: { ...config.states, open } } as never,
    runFramingMachine.implementations as never,
  );
}

describe("run framing negative controls (each check can fail)", () => {
  const fails = (machine: AnyStateMachine, id: string) => expectCheckFires(runSuite(machine).violations, id);
  it("I5.1 catches a run that agent_settled does not close", () => fails(neverSettles(), "I5.1"));
  it("I5.2 catches an unannounced run that is never started", () => {
    fails(runFramingMachine.provide({ actions: { startUnannounced: () => {} } }), "I5.2");
  });
  it("I5.3 catches the run's own prompt reported as an addition", () => {
    fails(runFramingMachine.provide({ guards: { announcesPrompt: () => false } }), "I5.3");
  });
  it("I5.3 catches an addition that is dropped", () => {
    fails(runFramingMachine.provide({ actions: { addUserMessage: () => {} } }), "I5.3");
  });
  it("I5.4 catches State Flow's own anchor named as the run's source", () => {
    fails(runFramingMachine.provide({ guards: { isOwnAnchor: () => false } }), "I5.4");
  });
});

describe("run framing property", () => {
  it("I5.1–I5.4 for arbitrary sequences of Pi events", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 30 }), (events) => {
        const actor = createActor(runFramingMachine).start();
        const trace: FramingTrace = { open: false, promptPending: false, sourcePending: false };
        let emitted: RunFramingEmitted[] = [];
        actor.on("*", (e) => void emitted.push(e));
        for (const event of events) {
          const prev = actor.getSnapshot();
          emitted = [];
          actor.send(event);
          const violations = checkFramingStep({ event, prev, next: actor.getSnapshot(), emitted } as never, trace);
          expect(violations, violations.join("\n")).toEqual([]);
        }
        actor.stop();
      }),
      { numRuns: 300 },
    );
  });
});
