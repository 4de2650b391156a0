import { describe, expect, it } from "vitest";
import { assign, createActor, type AnyMachineSnapshot } from "xstate";
import {
  publicationMachine,
  publicationStatus,
  type PublicationContext,
  type AskAnnounced,
  type PushAnnounced,
  type PublicationEvent,
  type PublicationInput,
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

/** A target the machine does not hold (names are free: only null-ness reaches the guards). */
function freshTarget(c: PublicationContext): string {
  for (let i = 1; ; i++) if (![c.queued, c.inflight, c.pending].includes(`t${i}`)) return `t${i}`;
}

function eventsFor(s: AnyMachineSnapshot): PublicationEvent[] {
  const c = s.context as PublicationContext;
  const results: PublicationEvent[] = [];
  for (const type of ["PUSH_OK", "PUSH_FAILED", "PUSH_LOCAL_ONLY", "PUSH_UNREACHABLE"] as const) {
    if (c.inflight) {
      results.push({ type, target: c.inflight, generation: c.generation });
      results.push({ type, target: c.inflight, generation: c.generation - 1 });
    }
    results.push({ type, target: c.inflight === "t0" ? "t-stale" : "t0", generation: c.generation });
  }
  // The remote's answers about a restored target: current, of an older generation, of another target.
  for (const type of ["REMOTE_HAS", "REMOTE_LACKS", "REMOTE_UNANSWERED"] as const) {
    const answer = (target: string, generation: number): PublicationEvent =>
      type === "REMOTE_UNANSWERED"
        ? { type, target, generation, error: "no answer within 10 s" }
        : { type, target, generation };
    if (c.pending) {
      results.push(answer(c.pending, c.generation));
      results.push(answer(c.pending, c.generation - 1));
    }
    results.push(answer(c.pending === "t0" ? "t-stale" : "t0", c.generation));
  }
  return [
    { type: "ACCEPTED", target: freshTarget(c) },
    // ISS-2: the target whose push is in flight is accepted again (restored intent + new cohort)
    ...(c.inflight ? [{ type: "ACCEPTED", target: c.inflight } as const] : []),
    { type: "TURN_END" },
    { type: "RETRY" },
    { type: "RESTORED_PENDING", target: "t0", attempts: 2, error: "offline" },
    { type: "RESTORED_PENDING", target: "t0", attempts: 1, ask: true },
    { type: "REMOTE_FOUND" },
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

const holdsTarget = (c: PublicationContext) => c.queued !== null || c.inflight !== null || c.pending !== null;

export function checkPublicationStep(
  step: StepInfo<PublicationEvent>,
  trace: Trace,
  input: PublicationInput,
): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  const before = flattenValue(prev.value);
  const after = flattenValue(next.value);
  const isResult =
    event.type === "PUSH_OK" ||
    event.type === "PUSH_FAILED" ||
    event.type === "PUSH_LOCAL_ONLY" ||
    event.type === "PUSH_UNREACHABLE";
  const isCurrent = isResult && event.target === p.inflight && event.generation === p.generation;
  const isAnswer = event.type === "REMOTE_HAS" || event.type === "REMOTE_LACKS" || event.type === "REMOTE_UNANSWERED";
  const wasChecking = before === "remote.checking";
  const isCurrentAnswer = isAnswer && wasChecking && event.target === p.pending && event.generation === p.generation;
  const pushes = step.emitted.filter((e): e is PushAnnounced => e.type === "publication.push");
  const asks = step.emitted.filter((e): e is AskAnnounced => e.type === "publication.ask");
  const started = pushes[0] ?? null;
  const wasPushing = before.startsWith("remote.pushing");
  const isPushing = after.startsWith("remote.pushing");
  if (event.type === "ACCEPTED") trace.lastAccepted = event.target;
  // I3.9
  if (event.type === "REMOTE_FOUND") {
    const expected = input.backend === "file" ? "fileOnly" : p.policy === "off" ? "off" : "remote.idle";
    if (before === "localOnly" && (after !== expected || !n.remote || holdsTarget(n)))
      v.push(`I3.9 a remote found while local-only led to ${after} (remote ${n.remote}), not ${expected}`);
    if (before !== "localOnly" && (before !== after || n.remote !== p.remote))
      v.push(`I3.9 REMOTE_FOUND changed ${before} → ${after}`);
  }
  // I3.8
  const announcedStale = step.emitted.some((e) => e.type === "publication.stale");
  if (isResult && !isCurrent && prev.status === "active" && !announcedStale)
    v.push(`I3.8 a stale ${event.type} was not announced`);
  if (announcedStale && (!isResult || isCurrent)) v.push(`I3.8 ${event.type} announced stale although it counted`);
  // I3.1
  if (n.queued !== null && n.queued !== trace.lastAccepted)
    v.push(`I3.1 queued ${n.queued} is not the newest accepted ${trace.lastAccepted}`);
  if (event.type === "ACCEPTED" && wasPushing && event.target === p.inflight && (n.queued !== null || started))
    v.push(`I3.1 ${event.target}, accepted while its own push is in flight, was queued (${n.queued}) or pushed again`);
  // I3.2
  if (isResult && !isCurrent) {
    if (before !== after || JSON.stringify(p) !== JSON.stringify(n) || started)
      v.push(`I3.2 stale result ${JSON.stringify(event)} changed ${before} → ${after}`);
  }
  const confirms = (event.type === "PUSH_OK" && isCurrent) || (event.type === "REMOTE_HAS" && isCurrentAnswer);
  if (after === "remote.confirmed" && before !== "remote.confirmed" && !confirms)
    v.push(`I3.2 confirmed reached on ${JSON.stringify(event)} (only a current PUSH_OK or REMOTE_HAS confirms)`);
  if (event.type === "PUSH_OK" && isCurrent && (n.pending !== null || (n.inflight === p.inflight && !started)))
    v.push(`I3.2 confirmed ${p.inflight} is still pending or in flight`);
  // I3.3
  const publishes = input.backend === "git" && n.remote && input.policy !== "off";
  if (!publishes && (after.startsWith("remote") || holdsTarget(n) || started))
    v.push(`I3.3 ${input.backend}/${n.remote ? "remote" : "no remote"}/${input.policy} reached ${after}`);
  if (event.type === "PUSH_LOCAL_ONLY" && isCurrent && (after !== "localOnly" || holdsTarget(n)))
    v.push(`I3.3 a push that found no remote left ${after} with targets`);
  if (after === "localOnly" && holdsTarget(n)) v.push("I3.3 localOnly holds targets");
  // I3.4
  if (started && event.type === "ACCEPTED" && input.policy === "turn-end")
    v.push("I3.4 turn-end policy pushed synchronously on ACCEPTED");
  if (
    event.type === "ACCEPTED" &&
    input.policy === "transition" &&
    publishes &&
    before.startsWith("remote") &&
    p.inflight === null &&
    !started
  )
    v.push(`I3.4 transition policy did not push ${event.target} at once (from ${before})`);
  if (
    started &&
    input.policy === "turn-end" &&
    !["TURN_END", "RETRY"].includes(event.type) &&
    !(before === "remote.pushing.turnEnded" && isCurrent) &&
    !(event.type === "REMOTE_LACKS" && isCurrentAnswer)
  )
    v.push(`I3.4 turn-end push started by ${event.type} (from ${before})`);
  // a turn end while a newer target is queued behind a push is not lost: the current result pushes it
  if (
    event.type === "TURN_END" &&
    before === "remote.pushing.inFlight" &&
    p.queued !== null &&
    after !== "remote.pushing.turnEnded"
  )
    v.push("I3.4 turn end during a push was lost");
  if (
    before === "remote.pushing.turnEnded" &&
    isCurrent &&
    event.type !== "PUSH_LOCAL_ONLY" &&
    !(started && n.inflight === p.queued)
  )
    v.push(`I3.4 turnEnded did not push the queued target ${p.queued}`);
  // I3.5
  if (pushes.length > 1) v.push(`I3.5 ${pushes.length} pushes started by one event`);
  if (started && wasPushing && !isCurrent) v.push("I3.5 second push started while one is in flight");
  if (started && (!isPushing || started.target !== n.inflight || started.generation !== n.generation))
    v.push(
      `I3.5 announced push ${JSON.stringify(started)} ` +
        `is not the push in flight (${n.inflight}@${n.generation}, ${after})`,
    );
  // every push start is announced: a new in-flight target, or still pushing after the in-flight push
  // returned (a restart, possibly of the same target, that no snapshot diff can see)
  if (isPushing && !started && (!wasPushing || n.inflight !== p.inflight || isCurrent))
    v.push(`I3.5 push of ${n.inflight} started without publication.push (on ${event.type} from ${before})`);
  if (isPushing !== (n.inflight !== null && after.startsWith("remote")))
    v.push(`I3.5 inflight ${n.inflight} inconsistent with ${after}`);
  // I3.6
  if (event.type === "PUSH_FAILED" && isCurrent && p.queued === null && n.pending !== p.inflight)
    v.push(`I3.6 failed push lost its target ${p.inflight}`);
  if (event.type === "PUSH_FAILED" && isCurrent && n.pending === p.inflight) {
    const expected = p.pending === p.inflight ? p.attempts + 1 : 1;
    if (n.attempts !== expected || n.lastError !== (event.error ?? "push failed"))
      v.push(`I3.6 failure count ${n.attempts} (expected ${expected}) / error ${n.lastError}`);
  }
  if (n.pending === null && (n.attempts !== 0 || n.lastError !== null))
    v.push(`I3.6 attempts/lastError ${n.attempts}/${n.lastError} without a pending target`);
  if (
    before === "remote.pending" &&
    isPushing &&
    (event.type === "TURN_END" || event.type === "RETRY") &&
    n.inflight !== p.pending
  )
    v.push(`I3.6 retry pushed ${n.inflight} instead of pending ${p.pending}`);
  if (
    event.type === "RESTORED_PENDING" &&
    before === "remote.idle" &&
    !(
      after === (event.ask ? "remote.checking" : "remote.pending") &&
      n.pending === event.target &&
      n.attempts === (event.attempts ?? 0) &&
      n.lastError === (event.error ?? null)
    )
  )
    v.push("I3.6 restored pending publication was lost");
  // I3.7
  if (
    event.type === "SHUTDOWN" &&
    prev.status === "active" &&
    (next.status !== "done" || n.generation !== p.generation + 1)
  )
    v.push("I3.7 SHUTDOWN did not close and fence the generation");
  if (prev.status === "done" && JSON.stringify(prev.value) !== JSON.stringify(next.value))
    v.push("I3.7 closed machine changed");
  if (event.type === "PUSH_UNREACHABLE" && isCurrent) {
    if (n.pending === p.inflight || n.inflight === p.inflight)
      v.push(`I3.7 unreachable ${p.inflight} kept for another push`);
    if (p.queued === null && (after !== "remote.idle" || n.generation !== p.generation + 1 || holdsTarget(n)))
      v.push(
        `I3.7 unreachable ${p.inflight} with nothing newer ` +
          `did not reset the lineage (${after}, generation ${n.generation})`,
      );
    if (p.queued !== null && (n.generation !== p.generation || (n.queued !== p.queued && n.inflight !== p.queued)))
      v.push(`I3.7 unreachable ${p.inflight} dropped the newer queued target ${p.queued}`);
  }
  v.push(...checkRemoteQuestion(step, { before, after, isAnswer, isCurrentAnswer, asks, pushes }));
  return v;
}

/** I3.10: the one question to the remote (a restored target) is announced, fenced and answered as drawn. */
function checkRemoteQuestion(
  step: StepInfo<PublicationEvent>,
  s: {
    before: string;
    after: string;
    isAnswer: boolean;
    isCurrentAnswer: boolean;
    asks: AskAnnounced[];
    pushes: PushAnnounced[];
  },
): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  const entered = s.after === "remote.checking" && s.before !== "remote.checking";
  if (entered !== (s.asks.length === 1) || s.asks.length > 1)
    v.push(`I3.10 ${s.asks.length} questions announced on ${event.type} (${s.before} → ${s.after})`);
  const ask = s.asks[0];
  if (ask && (ask.target !== n.pending || ask.generation !== n.generation))
    v.push(`I3.10 asked about ${ask.target}@${ask.generation}, not the restored ${n.pending}@${n.generation}`);
  if (s.isAnswer && !s.isCurrentAnswer && prev.status === "active") {
    if (s.before !== s.after || JSON.stringify(p) !== JSON.stringify(n) || step.emitted.length > 0)
      v.push(`I3.10 a stale answer ${JSON.stringify(event)} changed ${s.before} → ${s.after}`);
  }
  if (!s.isCurrentAnswer) return v;
  if (event.type === "REMOTE_HAS" && (s.after !== "remote.confirmed" || n.pending !== null || s.pushes.length > 0))
    v.push(`I3.10 the remote has ${p.pending}, yet ${s.after} holds pending ${n.pending}`);
  if (event.type === "REMOTE_LACKS" && (n.inflight !== p.pending || s.pushes[0]?.target !== p.pending))
    v.push(`I3.10 the remote lacks ${p.pending}, yet ${n.inflight} is pushed`);
  if (
    event.type === "REMOTE_UNANSWERED" &&
    (s.after !== "remote.pending" ||
      n.pending !== p.pending ||
      n.attempts !== p.attempts ||
      n.lastError !== event.error ||
      s.pushes.length > 0)
  )
    v.push(`I3.10 an unanswered question left ${s.after} (${n.pending}, ${n.attempts}, ${n.lastError})`);
  return v;
}

/** maxViolations: negative controls collect more, so the violation they target is not crowded out. */
function runSuite(machine: typeof publicationMachine, maxViolations = 20) {
  return runPathSuite<PublicationEvent, Trace, (typeof inputs)[number]>(machine, {
    maxViolations,
    inputs,
    spec: (input) => ({ events: eventsFor, serializeState, input, maxSimplePaths: 20_000 }),
    trace: () => ({ lastAccepted: null }),
    check: (step, trace, input) => checkPublicationStep(step, trace, input),
  });
}

describe("publication machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(publicationMachine);
  console.log(formatReport(report) + ` steps=${steps}`);

  it("I3.1–I3.10 hold after every step of every shortest, simple and edge path", () => {
    expect(report.paths.simple).toBeGreaterThan(50);
    expect(violations, violations.join("\n")).toEqual([]);
  });

  it("covers 100% of transitions (each guarded branch separately, always transitions included)", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
});

describe("publication negative controls", () => {
  it("I3.2 check catches a late result acknowledging whatever is in flight (no target/generation fence)", () => {
    const unfenced = publicationMachine.provide({
      guards: { isCurrentResult: ({ context }) => context.inflight !== null },
    });
    const { violations } = runSuite(unfenced, 10_000);
    expect(violations.some((v) => v.startsWith("I3.2"))).toBe(true);
  });

  it("I3.3 check catches a missing-remote route treated as publishable", () => {
    const { violations, report } = runSuite(
      publicationMachine.provide({ guards: { hasNoRemote: () => false } }),
      10_000,
    );
    expect(violations.some((v) => v.startsWith("I3.3"))).toBe(true);
    expect(report.uncovered).toContain("publication.route --always [hasNoRemote]--> publication.localOnly");
    expect(() => assertFullCoverage(report)).toThrow(UncoveredTransitionsError);
  });
});

describe("publication negative controls (turn end during a push)", () => {
  it("I3.4 check catches a turn end that is dropped while a push is in flight", () => {
    const { violations } = runSuite(publicationMachine.provide({ guards: { hasQueued: () => false } }), 10_000);
    expect(violations.some((v) => v.startsWith("I3.4 turn end during a push was lost"))).toBe(true);
  });
});

describe("publication negative controls (explicit push events, ISS-2)", () => {
  it("I3.5 check catches a push start that is not announced (the driver would never run it)", () => {
    const silent = publicationMachine.provide({
      actions: {
        startPushQueued: assign({
          inflight: ({ context }) => context.queued,
          queued: null,
          pending: null,
          attempts: 0,
          lastError: null,
        }) as never,
      },
    });
    const { violations } = runSuite(silent, 10_000);
    expect(violations.some((v) => v.startsWith("I3.5 push of"))).toBe(true);
  });

  it("I3.1 check catches a target queued behind its own in-flight push (the pre-ISS-2 machine)", () => {
    const requeues = publicationMachine.provide({
      actions: {
        queueNewest: assign({ queued: ({ event }) => (event.type === "ACCEPTED" ? event.target : null) }) as never,
      },
    });
    const { violations } = runSuite(requeues, 10_000);
    expect(violations.some((v) => v.startsWith("I3.1") && v.includes("was queued"))).toBe(true);
  });

  it(
    "I3.1 check catches an older target kept queued when the " +
      "in-flight target is accepted again (the first ISS-2 fix)",
    () => {
      const keepsOlder = publicationMachine.provide({
        actions: {
          queueNewest: assign({
            queued: ({ context, event }) =>
              event.type !== "ACCEPTED" ? null : event.target === context.inflight ? context.queued : event.target,
          }) as never,
        },
      });
      const { violations } = runSuite(keepsOlder, 10_000);
      expect(violations.some((v) => v.startsWith("I3.1") && v.includes("is not the newest accepted"))).toBe(true);
    },
  );

  it("I3.7 check catches an unreachable target resetting the lineage over a newer queued target", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { isCurrentResultWithQueued: () => false } }),
      10_000,
    );
    expect(violations.some((v) => v.startsWith("I3.7") && v.includes("dropped the newer queued target"))).toBe(true);
  });
});

describe("publication negative controls (the remote's answer about a restored target)", () => {
  it("I3.10 check catches an answer that counts without its target/generation fence", () => {
    const unfenced = publicationMachine.provide({ guards: { isCurrentAnswer: () => true } });
    const { violations } = runSuite(unfenced, 10_000);
    expect(violations.some((v) => v.startsWith("I3.10 a stale answer"))).toBe(true);
  });

  it("I3.10 check catches a question that is never announced (the driver would never ask, checking forever)", () => {
    const silent = publicationMachine.provide({ actions: { askRemote: assign({}) as never } });
    const { violations } = runSuite(silent, 10_000);
    expect(violations.some((v) => v.startsWith("I3.10 0 questions announced"))).toBe(true);
  });
});

/** An actor whose announced pushes are recorded (what the driver would run). */
function started(input: PublicationInput) {
  const actor = createActor(publicationMachine, { input });
  const pushes: Array<{ target: string; generation: number }> = [];
  actor.on("publication.push", ({ target, generation }) => pushes.push({ target, generation }));
  return { actor: actor.start(), pushes };
}

describe("publication scenarios", () => {
  it("I3.4 a turn end during a push pushes the newer queued target right after the current result", () => {
    const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "TURN_END" });
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "TURN_END" });
    a.send({ type: "PUSH_FAILED", target: "c1", generation: 0, error: "offline" });
    expect(pushes, "c2 supersedes the failed c1").toEqual([
      { target: "c1", generation: 0 },
      { target: "c2", generation: 0 },
    ]);
    expect(a.getSnapshot().context.pending).toBeNull();
    a.send({ type: "PUSH_FAILED", target: "c2", generation: 0, error: "offline" });
    expect(a.getSnapshot().context).toMatchObject({ pending: "c2", attempts: 1, lastError: "offline" });
    a.stop();
  });

  it("I3.3 a push that finds no remote ends local-only, dropping every target", () => {
    const { actor: a } = started({ policy: "transition", backend: "git", remote: true });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "PUSH_LOCAL_ONLY", target: "c1", generation: 0 });
    expect(publicationStatus(a.getSnapshot())).toBe("local-only");
    expect(holdsTarget(a.getSnapshot().context)).toBe(false);
    a.stop();
  });

  it("I3.2 a late result of an older push never acknowledges the newer queued target", () => {
    const { actor: a } = started({ policy: "turn-end", backend: "git", remote: true });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "TURN_END" });
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "PUSH_OK", target: "c1", generation: 0 });
    const s = a.getSnapshot();
    expect(publicationStatus(s), "I3.1 c2 stays queued, unconfirmed").toBe("queued");
    expect(s.context).toMatchObject({ queued: "c2", inflight: null, pending: null });
    a.stop();
  });

  it("I3.6 pending survives restart and retries the existing accepted commit", () => {
    const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true, generation: 7 });
    a.send({ type: "RESTORED_PENDING", target: "c9" });
    expect(publicationStatus(a.getSnapshot())).toBe("pending");
    a.send({ type: "RETRY" });
    expect(pushes, "I3.6 retry pushes the pending commit").toEqual([{ target: "c9", generation: 7 }]);
    a.stop();
  });

  it("I3.10 a restored target is asked about first: " + "has → confirmed, lacks → pushed, unanswered → pending", () => {
    const answers = [
      { type: "REMOTE_HAS", expect: "confirmed", pushes: [] },
      { type: "REMOTE_LACKS", expect: "pushing", pushes: ["r1"] },
      { type: "REMOTE_UNANSWERED", expect: "pending", pushes: [] },
    ] as const;
    for (const answer of answers) {
      const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true, generation: 3 });
      const asks: string[] = [];
      a.on("publication.ask", ({ target, generation }) => asks.push(`${target}@${generation}`));
      a.send({ type: "RESTORED_PENDING", target: "r1", attempts: 1, error: "offline", ask: true });
      expect(publicationStatus(a.getSnapshot())).toBe("checking");
      expect(asks).toEqual(["r1@3"]);
      a.send({ type: "RETRY" });
      a.send({ type: "TURN_END" });
      expect(publicationStatus(a.getSnapshot()), "only the answer moves it on").toBe("checking");
      a.send({ type: answer.type, target: "r1", generation: 2, error: "old" }); // an older runtime's answer
      expect(publicationStatus(a.getSnapshot())).toBe("checking");
      a.send({ type: answer.type, target: "r1", generation: 3, error: "no answer within 10 s" });
      expect(publicationStatus(a.getSnapshot())).toBe(answer.expect);
      expect(pushes.map((p) => p.target)).toEqual(answer.pushes);
      if (answer.type === "REMOTE_UNANSWERED")
        expect(a.getSnapshot().context).toMatchObject({
          pending: "r1",
          attempts: 1,
          lastError: "no answer within 10 s",
        });
      a.stop();
    }
  });

  it(
    "I3.10 a newer accepted target replaces the restored one being asked about; " +
      "the late answer counts for nothing",
    () => {
      const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true });
      a.send({ type: "RESTORED_PENDING", target: "r1", ask: true });
      a.send({ type: "ACCEPTED", target: "c2" });
      a.send({ type: "REMOTE_HAS", target: "r1", generation: 0 });
      expect(publicationStatus(a.getSnapshot())).toBe("queued");
      expect(a.getSnapshot().context.queued).toBe("c2");
      a.send({ type: "TURN_END" });
      expect(pushes.map((p) => p.target)).toEqual(["c2"]);
      a.stop();
    },
  );

  it("I3.3 no remote is local-only, not pending", () => {
    const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: false });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "TURN_END" });
    expect(publicationStatus(a.getSnapshot()), "I3.3 local-only").toBe("local-only");
    expect(holdsTarget(a.getSnapshot().context)).toBe(false);
    expect(pushes).toEqual([]);
    a.stop();
  });

  it(
    "I3.1 ISS-2: the target accepted while its own push is in " +
      "flight is covered by that push, and a later cohort is pushed",
    () => {
      const { actor: a, pushes } = started({ policy: "transition", backend: "git", remote: true });
      a.send({ type: "RESTORED_PENDING", target: "r1" });
      a.send({ type: "RETRY" });
      a.send({ type: "ACCEPTED", target: "r1" });
      expect(a.getSnapshot().context).toMatchObject({ inflight: "r1", queued: null });
      a.send({ type: "PUSH_FAILED", target: "r1", generation: 0, error: "remote down" });
      expect(publicationStatus(a.getSnapshot())).toBe("pending");
      expect(a.getSnapshot().context).toMatchObject({ pending: "r1", attempts: 1 });
      a.send({ type: "ACCEPTED", target: "r2" });
      expect(
        pushes.map((p) => p.target),
        "I3.5 one announcement per push, none for the re-accepted r1",
      ).toEqual(["r1", "r2"]);
      a.stop();
    },
  );

  it("I3.5 a same-target restart is a second announcement (what pushToStart's snapshot diff could not see)", () => {
    // The pre-ISS-2 queueNewest re-queues r1 behind itself; with explicit events the restart still runs.
    const requeues = publicationMachine.provide({
      actions: {
        queueNewest: assign({ queued: ({ event }) => (event.type === "ACCEPTED" ? event.target : null) }) as never,
      },
    });
    const a = createActor(requeues, { input: { policy: "transition", backend: "git", remote: true } });
    const pushes: string[] = [];
    a.on("publication.push", ({ target }) => pushes.push(target));
    a.start();
    a.send({ type: "ACCEPTED", target: "r1" });
    a.send({ type: "ACCEPTED", target: "r1" });
    const before = a.getSnapshot().context;
    a.send({ type: "PUSH_FAILED", target: "r1", generation: 0 });
    const after = a.getSnapshot().context;
    expect([before.inflight, after.inflight], "no snapshot difference in the in-flight target").toEqual(["r1", "r1"]);
    expect(pushes).toEqual(["r1", "r1"]);
    a.stop();
  });

  it(
    "I3.7 an unreachable target with nothing newer resets the lineage; with " +
      "a newer target queued after a turn end, that one is pushed at once",
    () => {
      const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true });
      a.send({ type: "RESTORED_PENDING", target: "gone", attempts: 2 });
      a.send({ type: "RETRY" });
      a.send({ type: "PUSH_UNREACHABLE", target: "gone", generation: 0 });
      expect(publicationStatus(a.getSnapshot())).toBe("idle");
      expect(a.getSnapshot().context).toMatchObject({
        generation: 1,
        queued: null,
        inflight: null,
        pending: null,
        attempts: 0,
      });
      a.send({ type: "ACCEPTED", target: "c1" });
      a.send({ type: "TURN_END" });
      a.send({ type: "ACCEPTED", target: "c2" });
      a.send({ type: "TURN_END" });
      a.send({ type: "PUSH_UNREACHABLE", target: "c1", generation: 1 });
      expect(pushes).toEqual([
        { target: "gone", generation: 0 },
        { target: "c1", generation: 1 },
        { target: "c2", generation: 1 },
      ]);
      expect(a.getSnapshot().context).toMatchObject({ inflight: "c2", pending: null, generation: 1 });
      a.stop();
    },
  );
});
