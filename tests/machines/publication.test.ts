import { describe, expect, it } from "vitest";
import { assign, createActor, fromPromise, type AnyEventObject } from "xstate";
import {
  publicationMachine,
  recordOf,
  type PublicationContext,
  type PublicationInput,
  type PublicationRecord,
  type PushOutput,
  type PushRequest,
  type RecordAnnounced,
  type RemoteHasOutput,
} from "../../machines/publication.ts";
import { publicationStatus } from "../../machines/publication-queries.ts";
import { flattenValue } from "../../machines/state-value.ts";
import {
  SELECTED,
  publicationEvents,
  publicationStateKey,
  type PublicationPathEvent,
} from "../support/replay-alphabets.ts";
import {
  assertFullCoverage,
  formatReport,
  UncoveredTransitionsError,
  listTransitions,
  runPathSuite,
  type StepInfo,
} from "../../machines/graph.ts";

/** The invoked actors' results, offered as events in every state (xstate/graph never runs the actors). */
type PathEvent = PublicationPathEvent;

const inputs: PublicationInput[] = [
  { policy: "turn-end", backend: "file", remote: true },
  { policy: "turn-end", backend: "git", remote: false },
  { policy: "off", backend: "git", remote: true },
  { policy: "turn-end", backend: "git", remote: true },
  { policy: "transition", backend: "git", remote: true },
  // restart recovery: the record is read first, then the remote is asked (or the target is pending at once)
  { policy: "turn-end", backend: "git", remote: true, selected: SELECTED, ask: true },
  { policy: "transition", backend: "git", remote: true, selected: SELECTED, ask: true },
  { policy: "transition", backend: "git", remote: true, restored: { revision: "t0", attempts: 1 } },
  { policy: "off", backend: "git", remote: true, selected: SELECTED, ask: true },
  {
    policy: "turn-end",
    backend: "git",
    remote: false,
    restored: { revision: "t0", attempts: 2, lastError: "offline" },
  },
];

/** What the stub actors were started with (the seam: they never settle; a path sends their results). */
const startedActors = { push: [] as PushRequest[], remoteHas: [] as PushRequest[], readRecord: [] as string[] };
function resetStarted() {
  startedActors.push.length = 0;
  startedActors.remoteHas.length = 0;
  startedActors.readRecord.length = 0;
}
const forever = <T>() => new Promise<T>(() => {});
function stubbed(machine: typeof publicationMachine) {
  return machine.provide({
    actors: {
      push: fromPromise<PushOutput, PushRequest>(({ input }) => (startedActors.push.push(input), forever())),
      remoteHas: fromPromise<RemoteHasOutput, PushRequest>(
        ({ input }) => (startedActors.remoteHas.push(input), forever()),
      ),
      readRecord: fromPromise<PublicationRecord | null, { selected: string }>(
        ({ input }) => (startedActors.readRecord.push(input.selected), forever()),
      ),
    },
  });
}

interface Trace {
  lastAccepted: string | null;
}

const holdsTarget = (c: PublicationContext) => c.queued !== null || c.inflight !== null || c.pending !== null;
const errorOf = (event: AnyEventObject) => ((event as { error?: Error }).error as Error).message;

export function checkPublicationStep(step: StepInfo<PathEvent>, trace: Trace, input: PublicationInput): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  const before = flattenValue(prev.value);
  const after = flattenValue(next.value);
  const isResult = event.type === "xstate.done.actor.push" || event.type === "xstate.error.actor.push";
  const wasPushing = before.startsWith("remote.pushing");
  const isPushing = after.startsWith("remote.pushing");
  // a result counts exactly while its push runs (I3.8)
  const isCurrent = isResult && wasPushing && prev.status === "active";
  const output = event.type === "xstate.done.actor.push" ? event.output : null;
  const pushed = isCurrent && output?.kind === "pushed";
  const failed = isCurrent && event.type === "xstate.error.actor.push";
  const localOnly = isCurrent && output?.kind === "local-only";
  const unreachable = isCurrent && output?.kind === "unreachable";
  const isAnswer = event.type === "xstate.done.actor.remoteHas" || event.type === "xstate.error.actor.remoteHas";
  const isCurrentAnswer = isAnswer && before === "remote.checking";
  const pushes = [...startedActors.push];
  const asks = [...startedActors.remoteHas];
  const reads = [...startedActors.readRecord];
  resetStarted();
  const started = pushes[0] ?? null;
  if (event.type === "ACCEPTED") trace.lastAccepted = event.target;
  if (next.status === "error") v.push(`I3.8 ${event.type} in ${before} was handled nowhere: the machine failed`);
  // I3.9
  if (event.type === "REMOTE_FOUND") {
    const expected = input.backend === "file" ? "fileOnly" : p.policy === "off" ? "off" : "remote.idle";
    if (before === "localOnly" && (after !== expected || !n.remote || holdsTarget(n)))
      v.push(`I3.9 a remote found while local-only led to ${after} (remote ${n.remote}), not ${expected}`);
    if (before !== "localOnly" && (before !== after || n.remote !== p.remote))
      v.push(`I3.9 REMOTE_FOUND changed ${before} → ${after}`);
  }
  // I3.8
  const isActorResult = event.type.startsWith("xstate.done.actor.") || event.type.startsWith("xstate.error.actor.");
  const runsThere =
    (isResult && wasPushing) ||
    (isCurrentAnswer && isAnswer) ||
    (event.type.includes("readRecord") && before === "recovering");
  if (isActorResult && !runsThere && prev.status === "active") {
    if (before !== after || JSON.stringify(p) !== JSON.stringify(n) || step.emitted.length > 0 || pushes.length > 0)
      v.push(`I3.8 ${event.type} arrived where its actor does not run (${before}) and changed ${before} → ${after}`);
  }
  // I3.1
  if (n.queued !== null && n.queued !== trace.lastAccepted)
    v.push(`I3.1 queued ${n.queued} is not the newest accepted ${trace.lastAccepted}`);
  if (event.type === "ACCEPTED" && wasPushing && event.target === p.inflight && (n.queued !== null || started))
    v.push(`I3.1 ${event.target}, accepted while its own push is in flight, was queued (${n.queued}) or pushed again`);
  // I3.2
  // (the remote having it: asked about a recovered target, or a sync that found the branch equal to the remote's)
  const confirms =
    pushed ||
    (event.type === "xstate.done.actor.remoteHas" && isCurrentAnswer && event.output.has) ||
    (event.type === "SYNCED" && event.standing === "equal");
  if (after === "remote.confirmed" && before !== "remote.confirmed" && !confirms)
    v.push(
      `I3.2 confirmed reached on ${JSON.stringify(event)} (only a pushed result or the remote having it confirms)`,
    );
  if (pushed && (n.pending !== null || (n.inflight === p.inflight && !started)))
    v.push(`I3.2 confirmed ${p.inflight} is still pending or in flight`);
  if (pushed && (n.lastResult?.kind !== "pushed" || n.lastResult.target !== p.inflight))
    v.push(`I3.2 the result of ${p.inflight} was not kept for its callers (${JSON.stringify(n.lastResult)})`);
  // I3.3
  const publishes = input.backend === "git" && n.remote && input.policy !== "off";
  if (!publishes && (after.startsWith("remote") || holdsTarget(n) || started))
    v.push(`I3.3 ${input.backend}/${n.remote ? "remote" : "no remote"}/${input.policy} reached ${after}`);
  if (localOnly && (after !== "localOnly" || holdsTarget(n)))
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
    before !== "remote.waiting" && // held until the sync lets it land (I3.12)
    p.inflight === null &&
    !started
  )
    v.push(`I3.4 transition policy did not push ${event.target} at once (from ${before})`);
  const lacks = event.type === "xstate.done.actor.remoteHas" && isCurrentAnswer && !event.output.has;
  if (
    started &&
    input.policy === "turn-end" &&
    // a join's commit, or a held target the remote turned out to lack, is pushed when the sync says so (I3.12)
    !["RUN_END", "RETRY", "JOINED", "SYNCED"].includes(event.type) &&
    !(before === "remote.pushing.runEnded" && isCurrent) &&
    !lacks
  )
    v.push(`I3.4 turn-end push started by ${event.type} (from ${before})`);
  // a run end while a newer target is queued behind a push is not lost: the current result pushes it
  if (
    event.type === "RUN_END" &&
    before === "remote.pushing.inFlight" &&
    p.queued !== null &&
    after !== "remote.pushing.runEnded"
  )
    v.push("I3.4 run end during a push was lost");
  // (a rejected push holds the queued target instead: I3.12)
  const rejectedPush = event.type === "xstate.done.actor.push" && event.output.kind === "rejected";
  if (
    before === "remote.pushing.runEnded" &&
    isCurrent &&
    !localOnly &&
    !rejectedPush &&
    !(started && n.inflight === p.queued)
  )
    v.push(`I3.4 runEnded did not push the queued target ${p.queued}`);
  // I3.5
  if (pushes.length > 1) v.push(`I3.5 ${pushes.length} pushes started by one event`);
  if (started && wasPushing && !isCurrent) v.push("I3.5 second push started while one is in flight");
  if (started && (!isPushing || started.target !== n.inflight || started.generation !== n.generation))
    v.push(
      `I3.5 started push ${JSON.stringify(started)} ` +
        `is not the push in flight (${n.inflight}@${n.generation}, ${after})`,
    );
  // every push start invokes the push actor: a new in-flight target, or still pushing after the in-flight
  // push returned (a restart, possibly of the same target, that no snapshot diff can see)
  if (isPushing && !started && (!wasPushing || n.inflight !== p.inflight || isCurrent))
    v.push(`I3.5 push of ${n.inflight} started without invoking the push actor (on ${event.type} from ${before})`);
  if (isPushing !== (n.inflight !== null && after.startsWith("remote")))
    v.push(`I3.5 inflight ${n.inflight} inconsistent with ${after}`);
  // I3.6
  if (failed && p.queued === null && n.pending !== p.inflight) v.push(`I3.6 failed push lost its target ${p.inflight}`);
  if (failed && n.pending === p.inflight) {
    const expected = p.pending === p.inflight ? p.attempts + 1 : 1;
    if (n.attempts !== expected || n.lastError !== errorOf(event))
      v.push(`I3.6 failure count ${n.attempts} (expected ${expected}) / error ${n.lastError}`);
  }
  if (n.pending === null && (n.attempts !== 0 || n.lastError !== null))
    v.push(`I3.6 attempts/lastError ${n.attempts}/${n.lastError} without a pending target`);
  if (
    before === "remote.pending" &&
    isPushing &&
    (event.type === "RUN_END" || event.type === "RETRY") &&
    n.inflight !== p.pending
  )
    v.push(`I3.6 retry pushed ${n.inflight} instead of pending ${p.pending}`);
  v.push(...checkRecovery(step, { before, after, input, reads }));
  // I3.7
  if (
    event.type === "SHUTDOWN" &&
    prev.status === "active" &&
    (next.status !== "done" || n.generation !== p.generation + 1)
  )
    v.push("I3.7 SHUTDOWN did not close and fence the generation");
  if (prev.status === "done" && JSON.stringify(prev.value) !== JSON.stringify(next.value))
    v.push("I3.7 closed machine changed");
  if (unreachable) {
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
  v.push(...checkRecord(step));
  v.push(...checkWaiting(step, { before, after, pushes }));
  return v;
}

/**
 * I3.12: a push the remote rejects (it holds another machine's commits) holds the newest target in
 * `remote.waiting`; there it is not pushed again at a run's end; a join's commit is what is pushed next,
 * or the held target once the sync finds the remote lacking it; a sync that finds the branch equal settles it.
 */
function checkWaiting(
  step: StepInfo<PathEvent>,
  s: { before: string; after: string; pushes: PushRequest[] },
): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  const rejected = event.type === "xstate.done.actor.push" && event.output.kind === "rejected";
  if (rejected && s.before.startsWith("remote.pushing") && prev.status === "active") {
    const held = p.queued ?? p.inflight;
    if (s.after !== "remote.waiting" || n.pending !== held || s.pushes.length > 0)
      v.push(`I3.12 a rejected push of ${p.inflight} left ${s.after} holding ${n.pending}, not ${held}`);
  }
  const idleLike = s.before === "remote.idle" || s.before === "remote.confirmed";
  if (idleLike && event.type === "SYNCED" && event.standing === "ahead" && !holdsTarget(p)) {
    if (s.pushes.length !== 1 || s.pushes[0]?.target !== event.head)
      v.push(`I3.12 the remote lacks the head ${event.head}, yet it was not pushed (${s.after})`);
  }
  if (s.before !== "remote.waiting") return v;
  if (event.type === "RUN_END" && (s.after !== "remote.waiting" || s.pushes.length > 0))
    v.push(`I3.12 a run end pushed the held ${p.pending} again (${s.after})`);
  if (event.type === "ACCEPTED" && (s.after !== "remote.waiting" || n.pending !== event.target || s.pushes.length > 0))
    v.push(`I3.12 ${event.target}, accepted while held, was pushed or not held (${s.after}, ${n.pending})`);
  if (event.type === "JOINED" && s.pushes[0]?.target !== event.target)
    v.push(`I3.12 the join ${event.target} was not pushed (${JSON.stringify(s.pushes)})`);
  if (event.type === "SYNCED" && event.standing === "ahead" && s.pushes[0]?.target !== p.pending)
    v.push(`I3.12 the remote lacks ${p.pending}, yet it was not pushed`);
  if (event.type === "SYNCED" && event.standing === "equal" && (s.after !== "remote.confirmed" || n.pending !== null))
    v.push(`I3.12 the branch equals the remote's, yet ${p.pending} stays held (${s.after})`);
  if (event.type === "SYNCED" && event.standing === "diverged" && (s.after !== s.before || s.pushes.length > 0))
    v.push(`I3.12 a divergence left waiting (${s.after}) or pushed`);
  return v;
}

/** I3.6 (restart): recovery reads the record once, and what it says decides what is pending. */
function checkRecovery(
  step: StepInfo<PathEvent>,
  s: { before: string; after: string; input: PublicationInput; reads: string[] },
): string[] {
  const v: string[] = [];
  const { event, prev, next } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  if (s.reads.length > 0) v.push(`I3.6 the record was read again on ${event.type} (${s.before} → ${s.after})`);
  if (s.before !== "recovering" || !event.type.includes("readRecord")) return v;
  const record = event.type === "xstate.done.actor.readRecord" ? event.output : null;
  const expected =
    record?.state === "settled" && record.revision === p.selected
      ? null
      : record?.state === "pending"
        ? { pending: record.revision, attempts: record.attempts, lastError: record.lastError ?? null }
        : { pending: p.selected, attempts: 0, lastError: null };
  if (n.selected !== null) v.push("I3.6 recovery did not finish: the record would be read again");
  const publishes = s.input.backend === "git" && n.remote && s.input.policy !== "off";
  if (!publishes || expected === null) {
    if (holdsTarget(n)) v.push(`I3.6 recovery left ${n.pending} pending on ${s.after}`);
    return v;
  }
  const at = s.input.ask ? "remote.checking" : "remote.pending";
  if (
    s.after !== at ||
    n.pending !== expected.pending ||
    n.attempts !== expected.attempts ||
    n.lastError !== expected.lastError
  )
    v.push(`I3.6 the recovered pending ${JSON.stringify(expected)} was lost (${s.after}, ${n.pending})`);
  return v;
}

/** I3.10: the one question to the remote (a recovered target) is asked, fenced and answered as drawn. */
function checkRemoteQuestion(
  step: StepInfo<PathEvent>,
  s: {
    before: string;
    after: string;
    isAnswer: boolean;
    isCurrentAnswer: boolean;
    asks: PushRequest[];
    pushes: PushRequest[];
  },
): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  const entered = s.after === "remote.checking" && s.before !== "remote.checking";
  if (entered !== (s.asks.length === 1) || s.asks.length > 1)
    v.push(`I3.10 ${s.asks.length} questions asked on ${event.type} (${s.before} → ${s.after})`);
  const ask = s.asks[0];
  if (ask && (ask.target !== n.pending || ask.generation !== n.generation))
    v.push(`I3.10 asked about ${ask.target}@${ask.generation}, not the recovered ${n.pending}@${n.generation}`);
  if (s.isAnswer && !s.isCurrentAnswer && prev.status === "active") {
    if (s.before !== s.after || JSON.stringify(p) !== JSON.stringify(n) || step.emitted.length > 0)
      v.push(`I3.10 a stale answer ${JSON.stringify(event)} changed ${s.before} → ${s.after}`);
  }
  if (!s.isCurrentAnswer) return v;
  if (event.type === "xstate.done.actor.remoteHas" && event.output.has) {
    if (s.after !== "remote.confirmed" || n.pending !== null || s.pushes.length > 0)
      v.push(`I3.10 the remote has ${p.pending}, yet ${s.after} holds pending ${n.pending}`);
  } else if (event.type === "xstate.done.actor.remoteHas") {
    if (n.inflight !== p.pending || s.pushes[0]?.target !== p.pending)
      v.push(`I3.10 the remote lacks ${p.pending}, yet ${n.inflight} is pushed`);
  } else if (
    s.after !== "remote.pending" ||
    n.pending !== p.pending ||
    n.attempts !== p.attempts ||
    n.lastError !== errorOf(event) ||
    s.pushes.length > 0
  )
    v.push(`I3.10 an unanswered question left ${s.after} (${n.pending}, ${n.attempts}, ${n.lastError})`);
  return v;
}

/** I3.11: every change of the pending publication is announced once as the record to write; closed writes nothing. */
function checkRecord(step: StepInfo<PathEvent>): string[] {
  const v: string[] = [];
  const { prev, next, event } = step;
  const p = prev.context as PublicationContext;
  const n = next.context as PublicationContext;
  const records = step.emitted.filter((e): e is RecordAnnounced => e.type === "publication.record");
  if (next.status !== "active") {
    if (records.length > 0) v.push(`I3.11 a record was announced at shutdown (${JSON.stringify(records)})`);
    return v;
  }
  if (JSON.stringify(recordOf(n)) !== JSON.stringify(n.record))
    v.push(`I3.11 the record says ${JSON.stringify(n.record)}, not ${JSON.stringify(recordOf(n))} (on ${event.type})`);
  // recovery takes the record it read as what the record says (announced only when the route changes it)
  const recovered = event.type.includes("readRecord") && flattenValue(prev.value) === "recovering";
  const changed = JSON.stringify(p.record) !== JSON.stringify(n.record);
  if (records.length > 1) v.push(`I3.11 ${records.length} records announced by one event`);
  if (!recovered && changed !== (records.length === 1))
    v.push(`I3.11 the record changed ${changed} but ${records.length} were announced (on ${event.type})`);
  if (records[0] && JSON.stringify(records[0].record) !== JSON.stringify(n.record))
    v.push(`I3.11 announced ${JSON.stringify(records[0].record)}, not the record ${JSON.stringify(n.record)}`);
  return v;
}

/** The sync's events and the rejected push (I3.12), left out where a control targets another invariant. */
const SYNC_EVENT_TYPES = ["SYNC", "CHOOSE", "JOINED", "SYNCED"];
const withoutSync = (s: Parameters<typeof publicationEvents>[0]) =>
  publicationEvents(s).filter(
    (e) => !SYNC_EVENT_TYPES.includes(e.type) && !(e.type === "xstate.done.actor.push" && e.output.kind === "rejected"),
  );

/**
 * maxViolations: negative controls collect more, so the violation they target is not crowded out. `sync`
 * false: a control whose mutation multiplies the paths leaves out the sync's events (it targets I3.1–I3.11).
 */
/** `stopWhen`: a negative control's target violation, after which nothing more is replayed. */
function runSuite(
  machine: typeof publicationMachine,
  maxViolations = 20,
  sync = true,
  stopWhen?: (violation: string) => boolean,
) {
  return runPathSuite<PathEvent, Trace, (typeof inputs)[number]>(stubbed(machine), {
    maxViolations,
    inputs,
    spec: (input) => ({
      events: sync ? publicationEvents : withoutSync,
      serializeState: publicationStateKey,
      input,
      maxSimplePaths: 30_000,
    }),
    trace: () => ({ lastAccepted: null }),
    ...(stopWhen ? { stopWhen } : {}),
    started: () => resetStarted(),
    check: (step, trace, input) => checkPublicationStep(step, trace, input),
  });
}

describe("publication machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(publicationMachine);
  console.log(formatReport(report) + ` steps=${steps}`);

  it("I3.1–I3.12 hold after every step of every shortest, simple and edge path", () => {
    expect(report.paths.simple).toBeGreaterThan(50);
    expect(violations, violations.join("\n")).toEqual([]);
  });

  it("covers 100% of transitions, the invoked actors' done and error transitions included", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
    // xstate/graph offers the actors' results as events: each invoked actor's done and error edge is walked
    const walked = new Set(report.uncovered);
    for (const actor of ["push", "remoteHas", "readRecord"])
      for (const result of ["done", "error"]) {
        const keys = listTransitions(publicationMachine)
          .map((t) => t.key)
          .filter((k) => k.includes(`--xstate.${result}.actor.${actor}`));
        expect(keys.length, `${result} of ${actor}`).toBeGreaterThan(0);
        expect(keys.filter((k) => walked.has(k))).toEqual([]);
      }
  });
});

describe("publication negative controls", () => {
  it("I3.2 check catches a result that confirms whatever it reports (no look at the push's output)", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { isPushed: () => true } }),
      10_000,
      true,
      (v) => v.startsWith("I3.2 confirmed reached"),
    );
    expect(violations.some((v) => v.startsWith("I3.2 confirmed reached"))).toBe(true);
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

describe("publication negative controls (run end during a push)", () => {
  it("I3.4 check catches a run end that is dropped while a push is in flight", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { hasQueued: () => false } }),
      10_000,
      true,
      (v) => v.startsWith("I3.4 run end during a push was lost"),
    );
    expect(violations.some((v) => v.startsWith("I3.4 run end during a push was lost"))).toBe(true);
  });
});

describe("publication negative controls (pushes are invoked actors, ISS-2)", () => {
  it("I3.5 check catches a push start that does not name the in-flight target (the actor would push nothing)", () => {
    const silent = publicationMachine.provide({
      actions: { startPushQueued: assign({ queued: null, pending: null, attempts: 0, lastError: null }) as never },
    });
    const { violations } = runSuite(silent, 10_000, false, (v) => v.startsWith("I3.5"));
    expect(violations.some((v) => v.startsWith("I3.5"))).toBe(true);
  });

  it("I3.1 check catches a target queued behind its own in-flight push (the pre-ISS-2 machine)", () => {
    const requeues = publicationMachine.provide({
      actions: {
        queueNewest: assign({ queued: ({ event }) => (event.type === "ACCEPTED" ? event.target : null) }) as never,
      },
    });
    const { violations } = runSuite(requeues, 10_000, false, (v) => v.startsWith("I3.1") && v.includes("was queued"));
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
      const { violations } = runSuite(
        keepsOlder,
        10_000,
        true,
        (v) => v.startsWith("I3.1") && v.includes("is not the newest accepted"),
      );
      expect(violations.some((v) => v.startsWith("I3.1") && v.includes("is not the newest accepted"))).toBe(true);
    },
  );

  it("I3.7 check catches an unreachable target resetting the lineage over a newer queued target", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { isUnreachableWithQueued: () => false } }),
      10_000,
      true,
      (v) => v.startsWith("I3.7") && v.includes("dropped the newer queued target"),
    );
    expect(violations.some((v) => v.startsWith("I3.7") && v.includes("dropped the newer queued target"))).toBe(true);
  });

  it("I3.12 check catches a rejected push treated as a failure (pushed again after every run)", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { isRejected: () => false } }),
      10_000,
      true,
      (v) => v.startsWith("I3.12 a rejected push"),
    );
    expect(violations.some((v) => v.startsWith("I3.12 a rejected push"))).toBe(true);
  });

  it("I3.12 check catches a head the remote lacks that nothing pushes (commits from before the remote)", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { syncFoundUnpushedHead: () => false } }),
      10_000,
      true,
      (v) => v.startsWith("I3.12 the remote lacks the head"),
    );
    expect(violations.some((v) => v.startsWith("I3.12 the remote lacks the head"))).toBe(true);
  });

  it("I3.12 check catches a sync that finds the remote lacking the held target and pushes nothing", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { syncFoundAhead: () => false } }),
      10_000,
      true,
      (v) => v.startsWith("I3.12 the remote lacks"),
    );
    expect(violations.some((v) => v.startsWith("I3.12 the remote lacks"))).toBe(true);
  });
});

describe("publication negative controls (restart recovery and the record)", () => {
  it("I3.10 check catches an answer whose content is not read (every answer settles)", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { remoteHasIt: () => true } }),
      10_000,
      true,
      (v) => v.startsWith("I3.10 the remote lacks"),
    );
    expect(violations.some((v) => v.startsWith("I3.10 the remote lacks"))).toBe(true);
  });

  it("I3.6 check catches a recovered target that is never asked about (pending at once although asked to ask)", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { asksAboutPending: () => false } }),
      10_000,
      true,
      (v) => v.startsWith("I3.6 the recovered pending"),
    );
    expect(violations.some((v) => v.startsWith("I3.6 the recovered pending"))).toBe(true);
  });

  it("I3.6 check catches a record that names the selected revision settled and is ignored", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { recordSettlesSelected: () => false } }),
      10_000,
      false,
      (v) => v.startsWith("I3.6 recovery left"),
    );
    expect(violations.some((v) => v.startsWith("I3.6 recovery left"))).toBe(true);
  });

  it("I3.11 check catches a changed pending publication that is never recorded", () => {
    const { violations } = runSuite(
      publicationMachine.provide({ guards: { recordChanged: () => false } }),
      10_000,
      true,
      (v) => v.startsWith("I3.11"),
    );
    expect(violations.some((v) => v.startsWith("I3.11"))).toBe(true);
  });
});

/** A started actor whose invoked actors the test settles by hand (the seam: stubs via provide). */
function started(input: PublicationInput, records: Array<PublicationRecord | null> = []) {
  type Deferred<T> = { input: PushRequest; resolve: (v: T) => void; reject: (e: Error) => void };
  const pushes: Array<Deferred<PushOutput>> = [];
  const asks: Array<Deferred<RemoteHasOutput>> = [];
  const deferred = <T>(list: Array<Deferred<T>>, input: PushRequest) =>
    new Promise<T>((resolve, reject) => list.push({ input, resolve, reject }));
  const machine = publicationMachine.provide({
    actors: {
      push: fromPromise<PushOutput, PushRequest>(({ input }) => deferred(pushes, input)),
      remoteHas: fromPromise<RemoteHasOutput, PushRequest>(({ input }) => deferred(asks, input)),
      readRecord: fromPromise<PublicationRecord | null, { selected: string }>(async () => records.shift() ?? null),
    },
  });
  const actor = createActor(machine, { input });
  const recorded: PublicationRecord[] = [];
  actor.on("publication.record", ({ record }) => recorded.push(record));
  return { actor: actor.start(), pushes, asks, recorded };
}
const tick = () => new Promise((r) => setTimeout(r, 0));
const targets = (list: Array<{ input: PushRequest }>) => list.map((d) => d.input);

describe("publication scenarios", () => {
  it("I3.4 a run end during a push pushes the newer queued target right after the current result", async () => {
    const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "RUN_END" });
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "RUN_END" });
    pushes[0]!.reject(new Error("offline"));
    await tick();
    expect(targets(pushes), "c2 supersedes the failed c1").toEqual([
      { target: "c1", generation: 0 },
      { target: "c2", generation: 0 },
    ]);
    expect(a.getSnapshot().context.pending).toBeNull();
    pushes[1]!.reject(new Error("offline"));
    await tick();
    expect(a.getSnapshot().context).toMatchObject({ pending: "c2", attempts: 1, lastError: "offline" });
    a.stop();
  });

  it("I3.3 a push that finds no remote ends local-only, dropping every target", async () => {
    const { actor: a, pushes } = started({ policy: "transition", backend: "git", remote: true });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "ACCEPTED", target: "c2" });
    pushes[0]!.resolve({ kind: "local-only" });
    await tick();
    expect(publicationStatus(a.getSnapshot())).toBe("local-only");
    expect(holdsTarget(a.getSnapshot().context)).toBe(false);
    a.stop();
  });

  it("I3.2 a result of an older push never acknowledges the newer queued target", async () => {
    const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "RUN_END" });
    a.send({ type: "ACCEPTED", target: "c2" });
    pushes[0]!.resolve({ kind: "pushed" });
    await tick();
    const s = a.getSnapshot();
    expect(publicationStatus(s), "I3.1 c2 stays queued, not confirmed").toBe("queued");
    expect(s.context).toMatchObject({ queued: "c2", inflight: null, pending: null });
    a.stop();
  });

  it("I3.8 a push result after shutdown never arrives: the push actor was stopped and its signal aborted", async () => {
    let signal: AbortSignal | null = null;
    let resolve: (o: PushOutput) => void = () => {};
    const machine = publicationMachine.provide({
      actors: {
        push: fromPromise<PushOutput, PushRequest>(
          ({ signal: s }) => ((signal = s), new Promise<PushOutput>((r) => (resolve = r))),
        ),
      },
    });
    const a = createActor(machine, { input: { policy: "transition", backend: "git", remote: true } }).start();
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "SHUTDOWN" });
    expect(signal!.aborted).toBe(true);
    resolve({ kind: "pushed" });
    await tick();
    expect(a.getSnapshot().status).toBe("done");
    expect(a.getSnapshot().context).toMatchObject({ inflight: null, lastResult: null, generation: 1 });
  });

  it("I3.6 pending survives restart and retries the existing accepted commit", () => {
    const { actor: a, pushes } = started({
      policy: "turn-end",
      backend: "git",
      remote: true,
      generation: 7,
      restored: { revision: "c9", attempts: 0 },
    });
    expect(publicationStatus(a.getSnapshot())).toBe("pending");
    a.send({ type: "RETRY" });
    expect(targets(pushes), "I3.6 retry pushes the pending commit").toEqual([{ target: "c9", generation: 7 }]);
    a.stop();
  });

  it("I3.6 recovery reads the record: pending there → pending; settled for the selected → nothing", async () => {
    const cases: Array<[PublicationRecord | null, string | null]> = [
      [{ state: "pending", revision: "r0", attempts: 3, lastError: "offline" }, "r0"],
      [{ state: "settled", revision: "s1" }, null],
      [{ state: "settled", revision: "older" }, "s1"],
      [null, "s1"],
    ];
    for (const [record, pending] of cases) {
      const input = { policy: "turn-end", backend: "git", remote: true, selected: "s1" } as const;
      const { actor: a, recorded } = started(input, [record]);
      expect(publicationStatus(a.getSnapshot())).toBe("recovering");
      await tick();
      expect(a.getSnapshot().context.pending).toBe(pending);
      expect(publicationStatus(a.getSnapshot())).toBe(pending ? "pending" : "idle");
      expect(recorded, "what the record already says is not written again").toEqual([]);
      a.stop();
    }
  });

  it(
    "I3.10 a recovered target is asked about first: " + "has → confirmed, lacks → pushed, unanswered → pending",
    async () => {
      const answers = [
        { settle: (d: { resolve: (o: RemoteHasOutput) => void }) => d.resolve({ has: true }), expect: "confirmed" },
        { settle: (d: { resolve: (o: RemoteHasOutput) => void }) => d.resolve({ has: false }), expect: "pushing" },
        {
          settle: (d: { reject: (e: Error) => void }) => d.reject(new Error("no answer within 10 s")),
          expect: "pending",
        },
      ] as const;
      for (const answer of answers) {
        const restored = { revision: "r1", attempts: 1, lastError: "offline" };
        const input = { policy: "turn-end", backend: "git", remote: true, generation: 3, restored, ask: true } as const;
        const { actor: a, pushes, asks } = started(input);
        expect(publicationStatus(a.getSnapshot())).toBe("checking");
        expect(targets(asks)).toEqual([{ target: "r1", generation: 3 }]);
        a.send({ type: "RETRY" });
        a.send({ type: "RUN_END" });
        expect(publicationStatus(a.getSnapshot()), "only the answer moves it on").toBe("checking");
        answer.settle(asks[0] as never);
        await tick();
        expect(publicationStatus(a.getSnapshot())).toBe(answer.expect);
        expect(targets(pushes).map((p) => p.target)).toEqual(answer.expect === "pushing" ? ["r1"] : []);
        if (answer.expect === "pending")
          expect(a.getSnapshot().context).toMatchObject({
            pending: "r1",
            attempts: 1,
            lastError: "no answer within 10 s",
          });
        a.stop();
      }
    },
  );

  it(
    "I3.10 a newer accepted target replaces the recovered one being asked about; " +
      "the question stops and its late answer counts for nothing",
    async () => {
      const input = { policy: "turn-end", backend: "git", remote: true, restored: { revision: "r1", attempts: 0 } };
      const { actor: a, pushes, asks } = started({ ...input, ask: true } as PublicationInput);
      a.send({ type: "ACCEPTED", target: "c2" });
      asks[0]!.resolve({ has: true });
      await tick();
      expect(publicationStatus(a.getSnapshot())).toBe("queued");
      expect(a.getSnapshot().context.queued).toBe("c2");
      a.send({ type: "RUN_END" });
      expect(targets(pushes).map((p) => p.target)).toEqual(["c2"]);
      a.stop();
    },
  );

  it("I3.3 no remote is local-only, not pending", () => {
    const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: false });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "RUN_END" });
    expect(publicationStatus(a.getSnapshot()), "I3.3 local-only").toBe("local-only");
    expect(holdsTarget(a.getSnapshot().context)).toBe(false);
    expect(pushes).toEqual([]);
    a.stop();
  });

  it(
    "I3.1 ISS-2: the target accepted while its own push is in " +
      "flight is covered by that push, and a later cohort is pushed",
    async () => {
      const restored = { revision: "r1", attempts: 0 };
      const { actor: a, pushes } = started({ policy: "transition", backend: "git", remote: true, restored });
      a.send({ type: "RETRY" });
      a.send({ type: "ACCEPTED", target: "r1" });
      expect(a.getSnapshot().context).toMatchObject({ inflight: "r1", queued: null });
      pushes[0]!.reject(new Error("remote down"));
      await tick();
      expect(publicationStatus(a.getSnapshot())).toBe("pending");
      expect(a.getSnapshot().context).toMatchObject({ pending: "r1", attempts: 1 });
      a.send({ type: "ACCEPTED", target: "r2" });
      expect(
        targets(pushes).map((p) => p.target),
        "I3.5 one push actor per push, none for the re-accepted r1",
      ).toEqual(["r1", "r2"]);
      a.stop();
    },
  );

  it("I3.5 a same-target restart invokes push again (what pushToStart's snapshot diff could not see)", async () => {
    // The pre-ISS-2 queueNewest re-queues r1 behind itself; with invoked pushes the restart still runs.
    const requeues = publicationMachine.provide({
      actions: {
        queueNewest: assign({ queued: ({ event }) => (event.type === "ACCEPTED" ? event.target : null) }) as never,
      },
    });
    const rejects: Array<(e: Error) => void> = [];
    const pushes: string[] = [];
    const machine = requeues.provide({
      actors: {
        push: fromPromise<PushOutput, PushRequest>(
          ({ input }) => (pushes.push(input.target), new Promise<PushOutput>((_, reject) => rejects.push(reject))),
        ),
      },
    });
    const a = createActor(machine, { input: { policy: "transition", backend: "git", remote: true } }).start();
    a.send({ type: "ACCEPTED", target: "r1" });
    a.send({ type: "ACCEPTED", target: "r1" });
    const before = a.getSnapshot().context;
    rejects[0]!(new Error("push failed"));
    await tick();
    const after = a.getSnapshot().context;
    expect([before.inflight, after.inflight], "no snapshot difference in the in-flight target").toEqual(["r1", "r1"]);
    expect(pushes).toEqual(["r1", "r1"]);
    a.stop();
  });

  it(
    "I3.7 an unreachable target with nothing newer resets the lineage; with " +
      "a newer target queued after a run end, that one is pushed at once",
    async () => {
      const restored = { revision: "gone", attempts: 2 };
      const { actor: a, pushes } = started({ policy: "turn-end", backend: "git", remote: true, restored });
      a.send({ type: "RETRY" });
      pushes[0]!.resolve({ kind: "unreachable" });
      await tick();
      expect(publicationStatus(a.getSnapshot())).toBe("idle");
      expect(a.getSnapshot().context).toMatchObject({
        generation: 1,
        queued: null,
        inflight: null,
        pending: null,
        attempts: 0,
      });
      a.send({ type: "ACCEPTED", target: "c1" });
      a.send({ type: "RUN_END" });
      a.send({ type: "ACCEPTED", target: "c2" });
      a.send({ type: "RUN_END" });
      pushes[1]!.resolve({ kind: "unreachable" });
      await tick();
      expect(targets(pushes)).toEqual([
        { target: "gone", generation: 0 },
        { target: "c1", generation: 1 },
        { target: "c2", generation: 1 },
      ]);
      expect(a.getSnapshot().context).toMatchObject({ inflight: "c2", pending: null, generation: 1 });
      a.stop();
    },
  );

  it("I3.11 the record follows the pending publication: pending until pushed, then settled", async () => {
    const { actor: a, pushes, recorded } = started({ policy: "turn-end", backend: "git", remote: true });
    a.send({ type: "ACCEPTED", target: "c1" });
    a.send({ type: "RUN_END" });
    pushes[0]!.reject(new Error("offline"));
    await tick();
    a.send({ type: "RETRY" });
    pushes[1]!.resolve({ kind: "pushed" });
    await tick();
    expect(recorded).toEqual([
      { state: "pending", revision: "c1", attempts: 0 },
      { state: "pending", revision: "c1", attempts: 1, lastError: "offline" },
      { state: "settled", revision: "c1" },
    ]);
    a.send({ type: "ACCEPTED", target: "c2" });
    a.send({ type: "SHUTDOWN" });
    expect(recorded.length, "shutdown records nothing: c2 stays pending").toBe(4);
  });
});
