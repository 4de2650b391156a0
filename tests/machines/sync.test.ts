import { describe, expect, it } from "vitest";
import { assign, createActor, enqueueActions, fromPromise, type AnyMachineSnapshot } from "xstate";
import { assertFullCoverage, formatReport, runPathSuite, type StepInfo } from "../../machines/graph.ts";
import { flattenValue } from "../../machines/state-value.ts";
import {
  isSyncing,
  conflictKey,
  openConflicts,
  syncMachine,
  type JoinRequest,
  type SyncArrival,
  type SyncContext,
  type SyncEvent,
  type SyncFinding,
} from "../../machines/sync.ts";

type PathEvent =
  | SyncEvent
  | { type: "xstate.done.actor.fetch"; output: SyncFinding }
  | { type: "xstate.error.actor.fetch"; error: Error }
  | { type: "xstate.done.actor.fastForward"; output: SyncArrival }
  | { type: "xstate.error.actor.fastForward"; error: Error }
  | { type: "xstate.done.actor.join"; output: SyncArrival }
  | { type: "xstate.error.actor.join"; error: Error };

const base = { remote: "origin", local: "l1", remoteHead: "r1", fromRemote: [], conflicts: [], localStartOnly: false };
const conflict = (scope: string) => ({ scope, localPaths: ["a"], remotePaths: ["a"] });
const FINDINGS: SyncFinding[] = [
  { ...base, standing: "equal" },
  { ...base, standing: "ahead" },
  { ...base, standing: "behind" },
  { ...base, standing: "diverged", fromRemote: ["global"] },
  { ...base, standing: "diverged", conflicts: [conflict("global"), conflict("cwd --p--")] },
  // the remote moved on: the same scopes conflict between other heads (a side chosen before no longer stands)
  { ...base, remoteHead: "r2", standing: "diverged", conflicts: [conflict("global"), conflict("cwd --p--")] },
  { ...base, standing: "unrelated", conflicts: [conflict("global"), conflict("cwd --p--")], localStartOnly: true },
  { ...base, standing: "unreachable", detail: "no answer" },
  { ...base, standing: "local-only", remote: null },
];
const ARRIVAL: SyncArrival = { revision: "j1", remote: "origin", scopes: ["global"] };
const running = (type: string, s: AnyMachineSnapshot) =>
  s.matches(type.endsWith(".fetch") ? "fetching" : type.endsWith(".fastForward") ? "fastForwarding" : "joining");
const RESULTS: PathEvent[] = [
  ...FINDINGS.map((output) => ({ type: "xstate.done.actor.fetch", output }) as const),
  { type: "xstate.error.actor.fetch", error: new Error("offline") },
  { type: "xstate.done.actor.fastForward", output: ARRIVAL },
  { type: "xstate.error.actor.fastForward", error: new Error("stale basis") },
  { type: "xstate.done.actor.join", output: ARRIVAL },
  { type: "xstate.error.actor.join", error: new Error("index locked") },
];

/** A reduced alphabet: choices where they count, and each actor's results where it runs (elsewhere none arrives). */
function events(s: AnyMachineSnapshot): PathEvent[] {
  const choosing = s.matches("diverged") || s.matches("unrelated");
  return [
    { type: "SYNC" },
    { type: "SYNC", asked: true },
    { type: "PUSHED", target: "p1" },
    { type: "CHOOSE", side: "remote" },
    ...(choosing
      ? ([
          { type: "CHOOSE", side: "local", scope: "global" },
          { type: "CHOOSE", side: "remote", scope: "nowhere" },
        ] as const)
      : []),
    ...RESULTS.filter((e) => running(e.type, s)),
  ];
}

const started = { fetch: 0, fastForward: [] as SyncFinding[], join: [] as JoinRequest[] };
const forever = <T>() => new Promise<T>(() => {});
const stubbed = (machine: typeof syncMachine) =>
  machine.provide({
    actors: {
      fetch: fromPromise<SyncFinding>(() => (started.fetch++, forever())),
      fastForward: fromPromise<SyncArrival, SyncFinding>(({ input }) => (started.fastForward.push(input), forever())),
      join: fromPromise<SyncArrival, JoinRequest>(({ input }) => (started.join.push(input), forever())),
    },
  });

const SETTLED = ["equal", "ahead", "behind", "diverged", "unrelated", "unreachable"];

function checkStep(step: StepInfo<PathEvent>): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const p = prev.context as SyncContext;
  const n = next.context as SyncContext;
  const before = flattenValue(prev.value);
  const after = flattenValue(next.value);
  if (next.status !== "active") return [`I6.5 ${event.type} in ${before} failed the machine`];
  // I6.1: a fetch's finding decides the state
  if (event.type === "xstate.done.actor.fetch" && before === "fetching") {
    const f = event.output;
    const expected =
      f.standing === "behind"
        ? "fastForwarding"
        : f.standing === "diverged" && f.conflicts.length === 0
          ? "joining"
          : f.standing === "local-only"
            ? "idle"
            : f.standing;
    if (after !== expected) v.push(`I6.1 ${f.standing} led to ${after}, not ${expected}`);
    // A side stands while the lines it was chosen for do: kept exactly for the scopes still conflicting between
    // the same two heads, and none otherwise.
    const same = p.finding !== null && f.local === p.finding.local && f.remoteHead === p.finding.remoteHead;
    const asked = new Set(f.conflicts.map((c) => c.scope));
    const expectedChoices = same ? Object.fromEntries(Object.entries(p.choices).filter(([s]) => asked.has(s))) : {};
    if (JSON.stringify(n.choices) !== JSON.stringify(expectedChoices))
      v.push(`I6.1 a new finding kept ${JSON.stringify(n.choices)}, not ${JSON.stringify(expectedChoices)}`);
  }
  if (event.type === "xstate.error.actor.fetch" && (after !== "unreachable" || n.finding?.standing !== "unreachable"))
    v.push(`I6.1 a failed fetch left ${after} (${n.finding?.standing})`);
  // I6.2: nothing is joined while a conflicting scope has no side; the join names every choice
  if (after === "joining" && before !== "joining") {
    if (openConflicts(n).length > 0) v.push(`I6.2 joining with ${openConflicts(n).length} scope(s) without a side`);
    const join = started.join.at(-1);
    if (started.join.length !== 1 || JSON.stringify(join?.choices) !== JSON.stringify(n.choices))
      v.push(`I6.2 the join was started ${started.join.length} time(s) with ${JSON.stringify(join?.choices)}`);
  } else if (started.join.length > 0) v.push(`I6.2 a join started on ${event.type} from ${before} to ${after}`);
  if (event.type === "CHOOSE" && !["diverged", "unrelated"].includes(before) && before !== after)
    v.push(`I6.2 a choice moved ${before} → ${after}`);
  // I6.3: what arrived is announced once; a failure is kept and names its standing
  const arrived = step.emitted.filter((e) => e.type === "sync.arrived");
  const success = event.type === "xstate.done.actor.fastForward" || event.type === "xstate.done.actor.join";
  if (success && running(event.type, prev) && (arrived.length !== 1 || n.arrival?.revision !== ARRIVAL.revision))
    v.push(`I6.3 ${event.type} announced ${arrived.length} arrival(s)`);
  if (!(success && running(event.type, prev)) && arrived.length > 0) v.push(`I6.3 an arrival on ${event.type}`);
  if (event.type === "xstate.error.actor.fastForward" && (after !== "behind" || n.error !== "stale basis"))
    v.push(`I6.3 a failed fast-forward left ${after} (${n.error})`);
  if (event.type === "xstate.error.actor.join" && (after !== "diverged" || n.error !== "index locked"))
    v.push(`I6.3 a failed join left ${after} (${n.error})`);
  if (event.type === "xstate.error.actor.join" && Object.keys(n.choices).length > 0)
    v.push("I6.3 a failed join kept the sides that led to it");
  // I6.4: each settled standing is counted and announced once
  const settled = step.emitted.filter((e) => e.type === "sync.settled");
  const entered = SETTLED.includes(after) && (before !== after || event.type.startsWith("xstate.done"));
  if (entered !== (n.seq === p.seq + 1) || settled.length !== (entered ? 1 : 0))
    v.push(`I6.4 ${before} → ${after}: seq ${p.seq} → ${n.seq}, ${settled.length} announcement(s)`);
  if (isSyncing(next) !== ["fetching", "fastForwarding", "joining"].includes(after)) v.push("I6.4 isSyncing is wrong");
  // I6.6: a conflict is told once per finding, and never by a notice when a person asked (their answer says it)
  const told = step.emitted.filter((e) => e.type === "sync.conflict");
  const fetchStarted = after === "fetching" && before !== "fetching";
  if (event.type === "SYNC" && fetchStarted && n.asked !== !!event.asked)
    v.push(`I6.6 a SYNC asked=${!!event.asked} noted ${n.asked}`);
  const chose =
    (after === "joining" && before !== "joining") || JSON.stringify(n.choices) !== JSON.stringify(p.choices);
  if (event.type === "CHOOSE" && chose && !n.asked) v.push("I6.6 a person's choice was not noted as asked");
  const key = conflictKey(n);
  const tells = entered && ["diverged", "unrelated"].includes(after) && key !== null && key !== p.told;
  if (told.length !== (tells && !n.asked ? 1 : 0))
    v.push(`I6.6 ${told.length} conflict notice(s) entering ${after} (asked ${n.asked}, told before: ${p.told})`);
  if (tells && n.told !== key) v.push(`I6.6 the conflict told is not remembered (${n.told})`);
  // I6.5: a fetch starts exactly when fetching is entered
  const fetches = started.fetch;
  if ((after === "fetching" && before !== "fetching") !== (fetches === 1) || fetches > 1)
    v.push(`I6.5 ${fetches} fetch(es) on ${event.type} (${before} → ${after})`);
  const ffEntered = after === "fastForwarding" && before !== "fastForwarding";
  if (ffEntered && (started.fastForward.length !== 1 || started.fastForward[0]?.remoteHead !== n.finding?.remoteHead))
    v.push("I6.5 the fast-forward was not started with the finding");
  started.fetch = 0;
  started.fastForward.length = 0;
  started.join.length = 0;
  return v;
}

function runSuite(machine: typeof syncMachine) {
  return runPathSuite<PathEvent, null>(stubbed(machine), {
    spec: () => ({
      events,
      // What guards read: the state, and how many conflicting scopes still lack a side.
      serializeState: (s) => JSON.stringify([s.value, openConflicts(s.context as SyncContext).length]),
      maxSimplePaths: 20_000,
    }),
    trace: () => null,
    started: () => {
      started.fetch = 0;
      started.fastForward.length = 0;
      started.join.length = 0;
    },
    check: (step) => checkStep(step),
    maxViolations: 200,
  });
}

describe("sync machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(syncMachine);
  console.log(formatReport(report) + ` steps=${steps}`);

  it("I6.1–I6.6 hold after every step of every shortest, simple and edge path", () => {
    expect(report.paths.simple).toBeGreaterThan(50);
    expect(violations, violations.join("\n")).toEqual([]);
  });

  it("covers 100% of transitions", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
});

describe("sync negative controls", () => {
  it("I6.2 check catches a choice that joins while another scope has no side", () => {
    const { violations } = runSuite(syncMachine.provide({ guards: { choiceSettlesAll: () => true } }));
    expect(violations.some((v) => v.startsWith("I6.2 joining with"))).toBe(true);
  });

  it("I6.1 check catches a divergence joined although a scope changed on both sides", () => {
    const { violations } = runSuite(
      syncMachine.provide({
        guards: { foundJoinable: ({ event }) => (event as { type: string }).type.endsWith("fetch") },
      }),
    );
    expect(violations.some((v) => v.startsWith("I6.1") || v.startsWith("I6.2"))).toBe(true);
  });
});

describe("sync negative controls: sides across fetches", () => {
  const fetched = (event: { type: string }) => (event as { output?: SyncFinding }).output ?? null;
  it("I6.1 check catches a side dropped by a fetch that found the same lines", () => {
    const dropping = assign({ finding: ({ event }) => fetched(event), choices: () => ({}), error: () => null });
    const { violations } = runSuite(syncMachine.provide({ actions: { keepFinding: dropping as never } }));
    expect(violations.some((v) => v.startsWith("I6.1 a new finding kept {}"))).toBe(true);
  });

  it("I6.1 check catches a side kept after the remote moved on", () => {
    const keeping = assign({ finding: ({ event }) => fetched(event), error: () => null });
    const { violations } = runSuite(syncMachine.provide({ actions: { keepFinding: keeping as never } }));
    expect(violations.some((v) => /^I6\.1 a new finding kept \{"/.test(v))).toBe(true);
  });
});

describe("sync negative controls: telling a conflict", () => {
  it("I6.6 check catches a conflict told by a notice although a person asked", () => {
    const always = enqueueActions(({ context: c, enqueue }) => {
      const context = c as SyncContext;
      const key = conflictKey(context);
      if (key === null || key === context.told) return;
      enqueue.assign({ told: key });
      enqueue.emit({ type: "sync.conflict" as const });
    });
    const { violations } = runSuite(syncMachine.provide({ actions: { tellConflict: always as never } }));
    expect(violations.some((v) => v.startsWith("I6.6 1 conflict notice(s)"))).toBe(true);
  });

  it("I6.6 check catches the same finding told again", () => {
    const again = enqueueActions(({ context: c, enqueue }) => {
      const context = c as SyncContext;
      if (conflictKey(context) !== null && !context.asked) enqueue.emit({ type: "sync.conflict" as const });
    });
    const { violations } = runSuite(syncMachine.provide({ actions: { tellConflict: again as never } }));
    expect(violations.some((v) => v.startsWith("I6.6"))).toBe(true);
  });
});

describe("sync machine (scripted)", () => {
  it("a conflict waits for a side per scope; the last side starts the join with every choice", async () => {
    const joins: JoinRequest[] = [];
    const actor = createActor(
      syncMachine.provide({
        actors: {
          fetch: fromPromise<SyncFinding>(async () => FINDINGS[4]!),
          join: fromPromise<SyncArrival, JoinRequest>(async ({ input }) => (joins.push(input), ARRIVAL)),
        },
      }),
    ).start();
    const arrivals: SyncArrival[] = [];
    actor.on("sync.arrived", (e) => arrivals.push(e.arrival));
    actor.send({ type: "SYNC" });
    await new Promise((r) => setTimeout(r, 10));
    expect(actor.getSnapshot().value).toBe("diverged");
    actor.send({ type: "CHOOSE", side: "local", scope: "global" });
    expect(actor.getSnapshot().value).toBe("diverged");
    actor.send({ type: "CHOOSE", side: "remote", scope: "cwd --p--" });
    await new Promise((r) => setTimeout(r, 10));
    expect(joins).toEqual([{ finding: FINDINGS[4], choices: { global: "local", "cwd --p--": "remote" } }]);
    expect(actor.getSnapshot().value).toBe("ahead");
    expect(arrivals).toEqual([ARRIVAL]);
  });
});
