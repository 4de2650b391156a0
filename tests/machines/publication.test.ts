import { describe, expect, it } from "vitest";
import { createActor, type AnyMachineSnapshot } from "xstate";
import {
  publicationMachine,
  publicationStatus,
  pushToStart,
  hasPendingPublication,
  type PublicationEvent,
  type PublicationInput,
  type PublicationContext,
} from "../../machines/publication.ts";
import { flattenValue } from "../../machines/episode.ts";
import {
  assertFullCoverage,
  formatReport,
  UncoveredTransitionsError,
  runPathSuite,
  type StepInfo,
} from "../../machines/graph.ts";

const inputs: PublicationInput[] = [
  { policy: "turn-end", backend: "file", remote: true },
  { policy: "turn-end", backend: "git", remote: false },
  { policy: "off", backend: "git", remote: true },
  { policy: "turn-end", backend: "git", remote: true },
  { policy: "transition", backend: "git", remote: true },
];

function eventsFor(s: AnyMachineSnapshot): PublicationEvent[] {
  const c = s.context as PublicationContext;
  const next = `t${c.acceptedCount + 1}`;
  const results: PublicationEvent[] = [];
  for (const type of ["PUSH_OK", "PUSH_FAILED", "PUSH_LOCAL_ONLY"] as const) {
    if (c.inflight) {
      results.push({ type, target: c.inflight, generation: c.generation });
      results.push({ type, target: c.inflight, generation: c.generation - 1 });
    }
    results.push({ type, target: c.inflight === "t0" ? "t-stale" : "t0", generation: c.generation });
  }
  return [
    { type: "ACCEPTED", target: next },
    { type: "TURN_END" },
    { type: "RETRY" },
    { type: "RESTORED_PENDING", target: "t0", attempts: 2, error: "offline" },
    { type: "LINEAGE_RESET" },
    { type: "SHUTDOWN" },
    ...results,
  ];
}
const serializeState = (s: AnyMachineSnapshot) => {
  const c = s.context as PublicationContext;
  return JSON.stringify([s.value, c.policy, c.queued !== null, c.inflight !== null, c.pending !== null]);
};

interface Trace {
  lastAccepted: string | null;
}

export function checkPublicationStep(step: StepInfo<PublicationEvent>, trace: Trace, input: PublicationInput): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  const before = flattenValue(prev.value);
  const after = flattenValue(next.value);
  const isResult = event.type === "PUSH_OK" || event.type === "PUSH_FAILED" || event.type === "PUSH_LOCAL_ONLY";
  const isCurrent = isResult && event.target === p.inflight && event.generation === p.generation;
  if (event.type === "ACCEPTED") trace.lastAccepted = event.target;
  if (event.type === "LINEAGE_RESET" && after.startsWith("remote")) trace.lastAccepted = null;
  // I3.1
  if (n.queued !== null && n.queued !== trace.lastAccepted) v.push(`I3.1 queued ${n.queued} is not the newest accepted ${trace.lastAccepted}`);
  // I3.2
  if (n.confirmed !== p.confirmed) {
    const ok = event.type === "PUSH_OK" && event.target === p.inflight && event.generation === p.generation && n.confirmed === p.inflight;
    if (!ok) v.push(`I3.2 confirmed moved ${p.confirmed} → ${n.confirmed} on ${JSON.stringify(event)}`);
  }
  if (isResult && !isCurrent) {
    if (before !== after || JSON.stringify(p) !== JSON.stringify(n)) v.push(`I3.2 stale result ${JSON.stringify(event)} changed ${before} → ${after}`);
  }
  // I3.3
  const publishes = input.backend === "git" && input.remote && input.policy !== "off";
  if (!publishes && (after.startsWith("remote") || hasPendingPublication(next as never)))
    v.push(`I3.3 ${input.backend}/${input.remote ? "remote" : "no remote"}/${input.policy} reached ${after}`);
  if (event.type === "PUSH_LOCAL_ONLY" && isCurrent && (after !== "localOnly" || n.queued || n.inflight || n.pending || hasPendingPublication(next as never)))
    v.push(`I3.3 a push that found no remote left ${after} with targets`);
  if (after === "localOnly" && (n.queued || n.inflight || n.pending)) v.push("I3.3 localOnly holds targets");
  // I3.4
  const started = pushToStart(prev as never, next as never);
  if (started && event.type === "ACCEPTED" && input.policy === "turn-end") v.push("I3.4 turn-end policy pushed synchronously on ACCEPTED");
  if (event.type === "ACCEPTED" && input.policy === "transition" && publishes && before.startsWith("remote") && p.inflight === null && !started)
    v.push(`I3.4 transition policy did not push ${event.target} at once (from ${before})`);
  if (started && input.policy === "turn-end" && !["TURN_END", "RETRY"].includes(event.type) && !(before === "remote.pushing.turnEnded" && isCurrent))
    v.push(`I3.4 turn-end push started by ${event.type} (from ${before})`);
  // a turn end while a newer target is queued behind a push is not lost: the current result pushes it
  if (event.type === "TURN_END" && before === "remote.pushing.inFlight" && p.queued !== null && after !== "remote.pushing.turnEnded")
    v.push("I3.4 turn end during a push was lost");
  if (before === "remote.pushing.turnEnded" && isCurrent && event.type !== "PUSH_LOCAL_ONLY" && !(started && n.inflight === p.queued))
    v.push(`I3.4 turnEnded did not push the queued target ${p.queued}`);
  // I3.5
  if (started && p.inflight !== null && before.startsWith("remote.pushing") && !isResult) v.push("I3.5 second push started while one is in flight");
  if (after.startsWith("remote.pushing") !== (n.inflight !== null && after.startsWith("remote")))
    v.push(`I3.5 inflight ${n.inflight} inconsistent with ${after}`);
  // I3.6
  if (event.type === "PUSH_FAILED" && isCurrent && p.queued === null && n.pending !== p.inflight)
    v.push(`I3.6 failed push lost its target ${p.inflight}`);
  if (event.type === "PUSH_FAILED" && isCurrent && n.pending === p.inflight) {
    const expected = p.pending === p.inflight ? p.attempts + 1 : 1;
    if (n.attempts !== expected || n.lastError !== (event.error ?? "push failed")) v.push(`I3.6 failure count ${n.attempts} (expected ${expected}) / error ${n.lastError}`);
  }
  if (n.pending === null && (n.attempts !== 0 || n.lastError !== null)) v.push(`I3.6 attempts/lastError ${n.attempts}/${n.lastError} without a pending target`);
  if (before === "remote.pending" && after === "remote.pushing" && (event.type === "TURN_END" || event.type === "RETRY") && n.inflight !== p.pending)
    v.push(`I3.6 retry pushed ${n.inflight} instead of pending ${p.pending}`);
  if (
    event.type === "RESTORED_PENDING" &&
    before === "remote.idle" &&
    !(after === "remote.pending" && n.pending === event.target && n.attempts === (event.attempts ?? 0) && n.lastError === (event.error ?? null))
  )
    v.push("I3.6 restored pending publication was lost");
  // I3.7
  if (event.type === "SHUTDOWN" && prev.status === "active" && (next.status !== "done" || n.generation !== p.generation + 1))
    v.push("I3.7 SHUTDOWN did not close and fence the generation");
  if (prev.status === "done" && JSON.stringify(prev.value) !== JSON.stringify(next.value)) v.push("I3.7 closed machine changed");
  if (event.type === "LINEAGE_RESET" && before.startsWith("remote")) {
    if (n.generation !== p.generation + 1 || n.queued || n.inflight || n.pending) v.push("I3.7 LINEAGE_RESET kept old targets or generation");
  }
  return v;
}

function runSuite(machine: typeof publicationMachine) {
  return runPathSuite<PublicationEvent, Trace, (typeof inputs)[number]>(machine, {
    inputs,
    spec: (input) => ({ events: eventsFor, serializeState, input, maxSimplePaths: 20_000 }),
    trace: () => ({ lastAccepted: null }),
    check: (step, trace, input) => checkPublicationStep(step, trace, input),
  });
}

describe("publication machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(publicationMachine);
  console.log(formatReport(report) + ` steps=${steps}`);

  it("I3.1–I3.7 hold after every step of every shortest, simple and edge path", () => {
    expect(report.paths.simple).toBeGreaterThan(50);
    expect(violations, violations.join("\n")).toEqual([]);
  });

  it("covers 100% of transitions (each guarded branch separately, always transitions included)", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
});

describe("publication negative controls", () => {
  it("I3.2 check catches a late result acknowledging whatever is in flight (no target/generation fence)", () => {
    const unfenced = publicationMachine.provide({ guards: { isCurrentResult: ({ context }) => context.inflight !== null } });
    const { violations } = runSuite(unfenced);
    expect(violations.some((v) => v.startsWith("I3.2"))).toBe(true);
  });

  it("I3.3 check catches a missing-remote route treated as publishable", () => {
    const { violations, report } = runSuite(publicationMachine.provide({ guards: { hasNoRemote: () => false } }));
    expect(violations.some((v) => v.startsWith("I3.3"))).toBe(true);
    expect(report.uncovered).toContain("publication.route --always [hasNoRemote]--> publication.localOnly");
    expect(() => assertFullCoverage(report)).toThrow(UncoveredTransitionsError);
  });
});

describe("publication negative controls (turn end during a push)", () => {
  it("I3.4 check catches a turn end that is dropped while a push is in flight", () => {
    const { violations } = runSuite(publicationMachine.provide({ guards: { hasQueued: () => false } }));
    expect(violations.some((v) => v.startsWith("I3.4 turn end during a push was lost"))).toBe(true);
  });
});

describe("publication scenarios", () => {
  it("I3.4 a turn end during a push pushes the newer queued target right after the current result", () => {
    const a = createActor(publicationMachine, { input: { policy: "turn-end", backend: "git", remote: true } }).start();
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "TURN_END" });
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "TURN_END" });
    const prev = a.getSnapshot();
    a.send({ type: "PUSH_FAILED", target: "c1", generation: 0, error: "offline" });
    expect(pushToStart(prev, a.getSnapshot()), "c2 supersedes the failed c1").toEqual({ target: "c2", generation: 0 });
    expect(a.getSnapshot().context.pending).toBeNull();
    a.send({ type: "PUSH_FAILED", target: "c2", generation: 0, error: "offline" });
    expect(a.getSnapshot().context).toMatchObject({ pending: "c2", attempts: 1, lastError: "offline" });
    a.stop();
  });

  it("I3.3 a push that finds no remote ends local-only, dropping every target", () => {
    const a = createActor(publicationMachine, { input: { policy: "transition", backend: "git", remote: true } }).start();
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "PUSH_LOCAL_ONLY", target: "c1", generation: 0 });
    expect(publicationStatus(a.getSnapshot())).toBe("local-only");
    expect(hasPendingPublication(a.getSnapshot())).toBe(false);
    a.stop();
  });

  it("I3.2 a late result of an older push never acknowledges the newer queued target", () => {
    const a = createActor(publicationMachine, { input: { policy: "turn-end", backend: "git", remote: true } }).start();
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "TURN_END" });
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "PUSH_OK", target: "c1", generation: 0 });
    const s = a.getSnapshot();
    expect(s.context.confirmed, "I3.2 only c1 is confirmed").toBe("c1");
    expect(publicationStatus(s), "I3.1 c2 stays queued").toBe("queued");
    expect(s.context.queued).toBe("c2");
    a.stop();
  });

  it("I3.6 pending survives restart and retries the existing accepted commit", () => {
    const a = createActor(publicationMachine, { input: { policy: "turn-end", backend: "git", remote: true, generation: 7 } }).start();
    a.send({ type: "RESTORED_PENDING", target: "c9" });
    expect(publicationStatus(a.getSnapshot())).toBe("pending");
    const prev = a.getSnapshot();
    a.send({ type: "RETRY" });
    expect(pushToStart(prev, a.getSnapshot()), "I3.6 retry pushes the pending commit").toEqual({ target: "c9", generation: 7 });
    a.stop();
  });

  it("I3.3 no remote is local-only, not pending", () => {
    const a = createActor(publicationMachine, { input: { policy: "turn-end", backend: "git", remote: false } }).start();
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "TURN_END" });
    expect(publicationStatus(a.getSnapshot()), "I3.3 local-only").toBe("local-only");
    expect(hasPendingPublication(a.getSnapshot())).toBe(false);
    a.stop();
  });
});
