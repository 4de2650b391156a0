import { describe, expect, it } from "vitest";
import { setup } from "xstate";
import {
  assertFullCoverage,
  coverageReport,
  generatePaths,
  listStates,
  listTransitions,
  replay,
  runPathSuite,
  TooManyPathsError,
  UncoveredTransitionsError,
} from "../../machines/graph.ts";

// A toy machine with a guarded branch, an always transition and a targetless transition.
const toy = setup({
  types: { context: {} as { n: number }, events: {} as { type: "GO"; big: boolean } | { type: "PING" } },
  guards: { isBig: ({ event }) => event.type === "GO" && event.big },
  actions: { note: () => {} },
}).createMachine({
  id: "toy",
  context: { n: 0 },
  initial: "a",
  states: {
    a: { on: { GO: [{ guard: "isBig", target: "big" }, { target: "small" }], PING: { actions: ["note"] } } },
    small: { always: { target: "done" } },
    big: {},
    done: { type: "final" },
  },
});
const events = () => [
  { type: "GO", big: true } as const,
  { type: "GO", big: false } as const,
  { type: "PING" } as const,
];

describe("graph utilities", () => {
  it("lists every transition, each guarded branch and always transitions separately", () => {
    expect(listTransitions(toy).map((t) => t.key)).toEqual([
      "toy.a --GO [isBig]--> toy.big",
      "toy.a --GO--> toy.small",
      "toy.a --PING--> (self)",
      "toy.small --always--> toy.done",
    ]);
    expect(listStates(toy)).toEqual(["toy.a", "toy.small", "toy.big", "toy.done"]);
  });

  it("generated paths reach 100% including the targetless transition via edge tours", () => {
    const paths = generatePaths(toy, { events, serializeState: (s) => JSON.stringify(s.value) });
    const covered = new Set<string>();
    for (const p of paths) for (const k of replay(toy, p.events)) covered.add(k);
    const report = coverageReport(toy, paths, covered);
    expect(report.uncovered).toEqual([]);
    expect(report.percent).toBe(100);
    expect(paths.some((p) => p.kind === "edge" && p.events.at(-1)?.type === "PING")).toBe(true);
  });

  it("negative control: a guard forced false is reported uncovered and assertFullCoverage throws", () => {
    const broken = toy.provide({ guards: { isBig: () => false } });
    const paths = generatePaths(broken, { events, serializeState: (s) => JSON.stringify(s.value) });
    const covered = new Set<string>();
    for (const p of paths) for (const k of replay(broken, p.events)) covered.add(k);
    const report = coverageReport(broken, paths, covered);
    expect(report.uncovered).toEqual(["toy.a --GO [isBig]--> toy.big"]);
    expect(() => assertFullCoverage(report)).toThrow(UncoveredTransitionsError);
    expect(() => assertFullCoverage(report)).toThrow(/toy\.a --GO \[isBig\]--> toy\.big/);
  });

  it("bounds simple-path enumeration with a named error", () => {
    expect(() =>
      generatePaths(toy, { events, serializeState: (s) => JSON.stringify(s.value), maxSimplePaths: 1 }),
    ).toThrow(TooManyPathsError);
  });

  it("replay reports each step with taken transitions and stops at final states", () => {
    const steps: string[][] = [];
    replay(toy, [{ type: "PING" }, { type: "GO", big: false }], { onStep: (s) => steps.push(s.taken) });
    expect(steps).toEqual([["toy.a --PING--> (self)"], ["toy.a --GO--> toy.small", "toy.small --always--> toy.done"]]);
  });
});

describe("runPathSuite", () => {
  const spec = () => ({ events, serializeState: (s: { value: unknown }) => JSON.stringify(s.value) });

  it("replays every generated path with a fresh trace per path and full coverage", () => {
    const traces: number[] = [];
    const result = runPathSuite(toy, {
      spec,
      trace: () => ({ steps: 0 }),
      check: (_step, trace) => {
        trace.steps++;
        traces.push(trace.steps);
        return [];
      },
    });
    expect(result.violations).toEqual([]);
    expect(result.steps).toBe(traces.length);
    // A fresh trace per path: every non-empty path's first step sees a trace at 1.
    const nonEmpty = generatePaths(toy, spec()).filter((p) => p.events.length > 0).length;
    expect(traces.filter((n) => n === 1).length).toBe(nonEmpty);
    expect(result.report.percent).toBe(100);
  });

  it("reports violations with their path and input, capped", () => {
    const result = runPathSuite(toy, {
      inputs: [{ label: "x" }],
      spec,
      trace: () => null,
      check: (step) => [`I9.9 ${step.event.type}`],
      maxViolations: 3,
    });
    expect(result.violations).toHaveLength(3);
    expect(result.violations[0]).toMatch(/^I9\.9 (GO|PING)\n {4}input \{"label":"x"\} path: \{"type"/);
  });

  it("stops replaying once a violation a negative control targets is found", () => {
    const all = runPathSuite(toy, { spec, trace: () => null, check: (step) => [`I9.9 ${step.event.type}`] });
    const stopped = runPathSuite(toy, {
      inputs: [{ label: "x" }, { label: "y" }],
      spec,
      trace: () => null,
      check: (step) => [`I9.9 ${step.event.type}`],
      stopWhen: (violation) => violation === "I9.9 GO",
    });
    expect(stopped.violations.at(-1)).toMatch(/^I9\.9 GO\n {4}input \{"label":"x"\}/);
    expect(stopped.steps).toBeLessThan(all.steps);
  });
});
