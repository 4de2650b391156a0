// The run machine (M5), checked after every step of generated paths (for each way a run begins,
// equipped or not) and of arbitrary event sequences against the independent oracle of
// tests/support/run-oracle.ts, whose header lists the invariants I5.1–I5.11. Its invoked actors are
// stand-ins: the resolution (M2) with a commit actor that commits or refuses at once by the draft's
// text (any other text never settles), a Knowledge discovery that never settles (paths deliver its
// result). The graph traversal never runs invoked actors, so a path delivers an answer's done event
// itself; a live replay's resolution also settles on its own (three unresolved drafts, a commit).
import { describe, expect, it } from "vitest";
import { createActor, createMachine, fromCallback, fromPromise, type AnyMachineSnapshot } from "xstate";
import type { AnyStateMachine } from "xstate";
import fc from "fast-check";
import { runMachine, runDiscarded, isPrepared, type RunInput, type RunMachineEvent } from "../../machines/run.ts";
import { resolutionMachine, type CommitResponseInput } from "../../machines/resolution.ts";
import {
  assertFullCoverage,
  formatReport,
  listTransitions,
  runPathSuite,
  TooManyPathsError,
  type CoverageReport,
  type SuiteResult,
} from "../../machines/graph.ts";
import { expectCheckFires } from "../support/negative-control.ts";
import { RESPONSE_COMMITTED, RESPONSE_REFUSED } from "../support/alphabets.ts";
import {
  COMMITS,
  KNOWLEDGE_FAILED,
  KNOWLEDGE_READY,
  OTHER_MESSAGE,
  OWN_ANCHOR,
  REFUSED,
  RUN_EVENTS,
  RUN_INPUTS,
  EARLIER,
  FRESH_ADOPTED,
  FRESH_FAILED,
} from "../support/run-alphabets.ts";
import { NO_SPECIFICATION } from "../../machines/specification.ts";
import { checkRunStep, initialTrace, performed, started, type RunTrace } from "../support/run-oracle.ts";

/** The answer's resolution with a commit actor that settles at once for COMMITS and REFUSED, never otherwise. */
const resolution = resolutionMachine.provide({
  actors: {
    commitResponse: fromCallback<never, CommitResponseInput>(({ input, sendBack }) => {
      if (input.text === COMMITS) sendBack(RESPONSE_COMMITTED);
      if (input.text === REFUSED) sendBack(RESPONSE_REFUSED);
    }) as never,
  },
});

/** The machine with its stand-in actors and host action (recording in `performed`). */
const withStubs = (machine: AnyStateMachine) =>
  machine.provide({
    actors: {
      resolution,
      refreshShared: fromPromise<never>(() => (performed.push("refresh"), new Promise<never>(() => undefined))),
      discoverKnowledge: fromPromise<void>(() => (performed.push("discover"), new Promise<never>(() => undefined))),
    },
    actions: {
      reportKnowledgeFailed: () => void performed.push("knowledge-failed"),
      reportFreshnessFailed: () => void performed.push("freshness-failed"),
    },
  });

// Guards read only the input (fixed per path) and the event: the state value is all that tells states apart.
const serializeState = (s: AnyMachineSnapshot) => JSON.stringify(s.value);
const MAX_SIMPLE_PATHS = 3_000;

function runSuite(machine: AnyStateMachine, inputs = RUN_INPUTS, maxSimplePaths = MAX_SIMPLE_PATHS) {
  return runPathSuite<RunMachineEvent, RunTrace, RunInput>(withStubs(machine), {
    inputs,
    spec: (input) => ({ events: () => RUN_EVENTS, serializeState, input, maxSimplePaths }),
    trace: () => initialTrace(RUN_INPUTS[0]!),
    started: (trace) => started(trace),
    check: (step, trace, input) => {
      // the trace is made before the input is known: the first step starts it from the input
      if (step.index === 0) Object.assign(trace, initialTrace(input), { refreshes: trace.refreshes });
      return checkRunStep(step, trace, input);
    },
    maxViolations: 5_000,
  });
}

const label = (input: RunInput) => `${input.opening.kind}${input.equipped ? ", equipped" : ", ordinary"}`;

/** One report over every input's paths: a transition is covered when some input's paths cover it. */
function merged(results: readonly SuiteResult[]): CoverageReport {
  const all = listTransitions(runMachine).map((t) => t.key);
  const uncovered = all.filter((key) => results.every((r) => r.report.uncovered.includes(key)));
  const sum = (k: keyof CoverageReport["paths"]) => results.reduce((n, r) => n + r.report.paths[k], 0);
  const paths = { shortest: sum("shortest"), simple: sum("simple"), edge: sum("edge"), total: sum("total") };
  const covered = all.length - uncovered.length;
  return {
    ...results[0]!.report,
    paths,
    covered,
    uncovered,
    percent: Math.round((10_000 * covered) / all.length) / 100,
  };
}

describe("run machine (generated paths)", () => {
  const results = RUN_INPUTS.map((input) => runSuite(runMachine, [input]));
  const report = merged(results);
  const violations = results.flatMap((r) => r.violations);
  const steps = results.reduce((n, r) => n + r.steps, 0);
  const perInput = results.map(
    ({ report: r, steps: n }, i) =>
      `${label(RUN_INPUTS[i]!)}: paths=${r.paths.total} (shortest=${r.paths.shortest} simple=${r.paths.simple} ` +
      `edge=${r.paths.edge}) covered=${r.covered}/${r.transitions} steps=${n}`,
  );
  console.log(formatReport(report) + ` steps=${steps}\n  ${perInput.join("\n  ")}`);

  it("I5.1–I5.11 hold after every step of every shortest, simple and edge path, for every opening", () => {
    expect(report.paths.simple).toBeGreaterThan(5);
    expect(violations, violations.join("\n")).toEqual([]);
  });
  it("covers 100% of transitions (each guarded and always branch separately)", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
  it("keeps the simple paths bounded", () => {
    expect(() => runSuite(runMachine, RUN_INPUTS, 10)).toThrow(TooManyPathsError);
  });
});

type Config = { states: Record<string, { states: Record<string, Record<string, unknown>> } & Record<string, unknown>> };
const config = runMachine.config as unknown as Config;
/** The machine with its `open` state's config patched (one structural change). */
function mutated(
  patch: (open: Config["states"][string]) => Config["states"][string],
  context?: unknown,
): AnyStateMachine {
  const open = patch(config.states.open!);
  return createMachine(
    { ...config, ...(context ? { context } : {}), states: { ...config.states, open } } as never,
    runMachine.implementations as never,
  );
}
const withRegion =
  (name: string, state: string, patch: Record<string, unknown>) => (open: Config["states"][string]) => {
    const region = open.states[name] as { states: Record<string, unknown> };
    const states = { ...region.states, [state]: { ...(region.states[state] as object), ...patch } };
    return { ...open, states: { ...open.states, [name]: { ...region, states } } };
  };

describe("run negative controls (each check can fail)", () => {
  const fails = (machine: AnyStateMachine, id: string) => expectCheckFires(runSuite(machine).violations, id);
  it("I5.1 catches a run agent_settled does not end", () =>
    fails(
      mutated((open) => ({ ...open, on: {} })),
      "I5.1",
    ));
  it("I5.2 catches a run agent_start alone began that does not await its source, or a prompt never framed", () => {
    fails(runMachine.provide({ guards: { openedUnannounced: () => false } }), "I5.2");
    fails(mutated(withRegion("framing", "awaitingPrompt", { on: {} })), "I5.2");
  });
  it("I5.3 catches the run's own prompt taken as an addition, and an addition dropped", () => {
    fails(runMachine.provide({ guards: { openedByPrompt: () => false } }), "I5.3");
    fails(runMachine.provide({ actions: { addUserMessage: () => {} } }), "I5.3");
  });
  it("I5.4 catches State Flow's own anchor named as the run's source", () => {
    fails(runMachine.provide({ guards: { isOwnAnchor: () => false } }), "I5.4");
  });
  it("I5.5 catches a prompt that does not replace the specification", () => {
    const keep = ({ input }: { input: RunInput }) => ({
      ...(config as unknown as { context: (a: unknown) => object }).context({ input }),
      specification: input.specification,
    });
    fails(
      mutated((open) => open, keep),
      "I5.5",
    );
  });
  it("I5.6 catches a user message after a settled answer that asks for no fresh one, or an ordinary answer", () => {
    fails(mutated(withRegion("answer", "resolved", { on: {} })), "I5.6");
    fails(mutated(withRegion("answer", "opening", { always: [{ target: "resolving" }] })), "I5.6");
  });
  it("I5.7 catches a settled answer's discarded drafts forgotten, and drafts not forwarded to the answer", () => {
    fails(runMachine.provide({ actions: { keepAnswer: () => {} } }), "I5.7");
    fails(runMachine.provide({ actions: { toResolution: () => {} } }), "I5.7");
  });
  it("I5.8 catches an ordinary run prepared, discovery before the check, failures not reported", () => {
    fails(mutated(withRegion("preparation", "opening", { always: [{ target: "refreshing" }] })), "I5.8");
    fails(mutated(withRegion("preparation", "opening", { always: [{ target: "discovering" }] })), "I5.8");
    const states = (config.states.open!.states.preparation as Config["states"][string]).states;
    const discovering = { ...(states.discovering!.invoke as object), onError: { target: "ready" } };
    fails(mutated(withRegion("preparation", "discovering", { invoke: discovering })), "I5.8");
    const refreshing = { ...(states.refreshing!.invoke as object), onError: { target: "discovering" } };
    fails(mutated(withRegion("preparation", "refreshing", { invoke: refreshing })), "I5.8");
    const skipped = { ...(states.refreshing!.invoke as object), onDone: { target: "ready" } };
    fails(mutated(withRegion("preparation", "refreshing", { invoke: skipped })), "I5.8");
  });
  it("I5.9 catches an accepted answer the run's output forgets, and a later answer's refusal ignored", () => {
    fails(runMachine.provide({ actions: { keepAnswer: () => {} } }), "I5.9");
    fails(runMachine.provide({ actions: { askAgain: () => {} } }), "I5.9");
  });
  it("I5.11 catches a refusal not kept, and one kept after a later patch was accepted", () => {
    fails(runMachine.provide({ actions: { keepRefusal: () => {} } }), "I5.11");
    // (a refusal and a later accepted patch are two self-loops of one state: no generated path takes both)
    const refusedThenAccepted = (machine: AnyStateMachine) => {
      const input: RunInput = { opening: { kind: "prompt", text: "p" }, equipped: true, specification: EARLIER };
      const actor = createActor(withStubs(machine), { input }).start();
      const trace = initialTrace(input);
      started(trace);
      const events: RunMachineEvent[] = [
        { type: "PATCH_REJECTED", reason: "the lock is held" },
        { type: "PATCH_ACCEPTED", final: false },
      ];
      const violations = events.flatMap((event, index) => {
        const prev = actor.getSnapshot();
        actor.send(event);
        return checkRunStep(
          { index, prev, event, next: actor.getSnapshot(), taken: [], emitted: [] } as never,
          trace,
          input,
        );
      });
      actor.stop();
      return violations;
    };
    expect(refusedThenAccepted(runMachine)).toEqual([]);
    expect(refusedThenAccepted(runMachine.provide({ actions: { clearRefusal: () => {} } })).join("\n")).toMatch(
      /^I5\.11 /m,
    );
  });
  it("I5.10 catches a finding not kept, and a failed check kept as a clean one", () => {
    fails(runMachine.provide({ actions: { keepFreshness: () => {} } }), "I5.10");
    fails(runMachine.provide({ actions: { freshnessUnavailable: () => {} } }), "I5.10");
  });
});

describe("run property", () => {
  const actorResult = /^xstate\.(?:done|error)\.actor\.(.+)$/;
  // agent_settled ends the run: it comes last (or not at all), so the answers have time to settle on their own
  const forwarded = new Set(["PATCH_ACCEPTED", "FINAL_ONLY", "PATCH_REJECTED", "DRAFT", "TURN_END"]);
  const event = fc.oneof(
    { arbitrary: fc.constantFrom(...RUN_EVENTS.filter((e) => forwarded.has(e.type))), weight: 4 },
    {
      arbitrary: fc.constantFrom(...RUN_EVENTS.filter((e) => !forwarded.has(e.type) && e.type !== "SETTLED")),
      weight: 1,
    },
    {
      arbitrary: fc.string({ maxLength: 3 }).map((text): RunMachineEvent => ({ type: "USER_MESSAGE", text })),
      weight: 1,
    },
  );
  const run = fc
    .tuple(fc.array(event, { maxLength: 40 }), fc.boolean())
    .map(([events, settled]) => (settled ? [...events, { type: "SETTLED" } as const] : events));
  it("I5.1–I5.11 for arbitrary sequences of a run's events, every opening", () => {
    /** Answers that settled on their own (exhausted, committed, refused), not by a delivered done event. */
    let settledLive = 0;
    fc.assert(
      fc.property(fc.constantFrom(...RUN_INPUTS), run, (input, events) => {
        performed.length = 0;
        const actor = createActor(withStubs(runMachine), { input }).start();
        const trace = initialTrace(input);
        started(trace);
        let index = 0;
        for (const e of events) {
          const prev = actor.getSnapshot();
          if (prev.status !== "active") break;
          // an invoked actor's result only comes while it runs
          const id = actorResult.exec(e.type)?.[1];
          if (id !== undefined && prev.children[id as "resolution"] === undefined) continue;
          actor.send(e);
          const next = actor.getSnapshot();
          const answer = { open: { answer: "resolving" } } as const;
          if (prev.matches(answer) && next.status === "active" && !next.matches(answer) && id === undefined)
            settledLive++;
          const step = { index: index++, prev, event: e, next, taken: [], emitted: [] };
          const violations = checkRunStep(step as never, trace, input);
          expect(violations, violations.join("\n")).toEqual([]);
        }
        actor.stop();
      }),
      { numRuns: 400 },
    );
    expect(settledLive, "the sequences let answers settle on their own").toBeGreaterThan(5);
  });
});

describe("run scenarios", () => {
  const prompt: RunInput = { opening: { kind: "prompt", text: "build it" }, equipped: true, specification: EARLIER };
  it("I5.6/I5.7/I5.9 answers: an exhausted one, then a fresh one on a user message that is accepted", () => {
    performed.length = 0;
    const actor = createActor(withStubs(runMachine), { input: prompt }).start();
    const first = actor.getSnapshot().children.resolution;
    actor.send({ type: "USER_MESSAGE", text: "build it" });
    for (const id of [1, 2, 3]) actor.send({ type: "DRAFT", ending: "complete", text: "draft", id });
    expect(actor.getSnapshot().matches({ open: { answer: "resolved" } }), "I5.6 three unresolved drafts").toBe(true);
    actor.send({ type: "DRAFT", ending: "aborted", id: 4 });
    expect([...runDiscarded(actor.getSnapshot())], "I5.7 nothing is resolving the late draft").toEqual([1, 2, 3]);
    actor.send({ type: "USER_MESSAGE", text: "and test it" });
    expect(actor.getSnapshot().children.resolution, "I5.6 a fresh resolution").not.toBe(first);
    actor.send({ type: "DRAFT", ending: "aborted", id: 5 });
    expect([...runDiscarded(actor.getSnapshot())], "I5.7 accumulated across answers").toEqual([1, 2, 3, 5]);
    actor.send({ type: "FINAL_ONLY" });
    actor.send({ type: "DRAFT", ending: "complete", text: COMMITS, id: 6 });
    actor.send({ type: "TURN_END" });
    expect(actor.getSnapshot().matches({ open: { answer: "resolved" } })).toBe(true);
    expect(isPrepared(actor.getSnapshot()), "I5.8 still checking").toBe(false);
    actor.send(FRESH_ADOPTED);
    expect(isPrepared(actor.getSnapshot()), "I5.8 still discovering").toBe(false);
    actor.send(KNOWLEDGE_READY);
    expect(isPrepared(actor.getSnapshot())).toBe(true);
    expect(actor.getSnapshot().context.freshness.kind, "I5.10").toBe("adopted");
    expect(actor.getSnapshot().context.specification.interrupted, "I5.5 the earlier open request").toEqual([
      { request: "an interrupted request", added: [] },
      { request: "the earlier request", added: ["an earlier addition"] },
    ]);
    actor.send({ type: "SETTLED" });
    expect(actor.getSnapshot().output, "I5.9 answered: nothing interrupted is left").toEqual({
      accepted: true,
      specification: { ...NO_SPECIFICATION, request: "build it", added: ["and test it"] },
    });
    actor.stop();
  });

  it("I5.4/I5.5 a run its anchor started keeps the request, names no source; SETTLED mid-answer accepts none", () => {
    const input: RunInput = { opening: { kind: "unannounced" }, equipped: true, specification: EARLIER };
    const actor = createActor(withStubs(runMachine), { input }).start();
    actor.send(OWN_ANCHOR);
    actor.send(OTHER_MESSAGE);
    actor.send(FRESH_FAILED);
    expect(actor.getSnapshot().context.freshness, "I5.10").toEqual({
      kind: "unavailable",
      reason: "cwd/meta.json could not be read",
    });
    actor.send(KNOWLEDGE_FAILED);
    actor.send({ type: "FINAL_ONLY" });
    actor.send({ type: "DRAFT", ending: "complete", text: "never committed", id: 1 });
    actor.send({ type: "TURN_END" });
    const answer = actor.getSnapshot().children.resolution!;
    actor.send({ type: "SETTLED" });
    expect(answer.getSnapshot().status, "I5.9 the answer being resolved is stopped").toBe("stopped");
    expect(actor.getSnapshot().output).toEqual({
      accepted: false,
      specification: { ...EARLIER, startedBy: { source: null }, unanswered: true },
    });
    actor.stop();
  });
});
