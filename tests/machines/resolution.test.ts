// The resolution machine (M2) of one answer, checked by an oracle after every step of generated paths:
//   I2.1 an answer starts ineligible with no steer used;
//   I2.2 only final:true latches eligibility, which does not end the turn and stays latched;
//   I2.3 a failed patch call consumes nothing;
//   I2.4 an interrupted draft (aborted, length, error, empty) neither steers nor commits nor moves the answer;
//   I2.5 unresolved complete drafts: attempts 1 and 2 steer once each, attempt 3 exhausts with one error;
//   I2.6 only turn_end after an eligible complete draft commits, that draft's text, once;
//   I2.7 final:true after steers still permits the answer (scenario);
//   I2.8 a refused commit is said and accepts nothing; the output says whether the answer became response;
//   I2.9 each discarded draft is recorded with its id, kept in context.discarded in order, and output.
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { createActor, emit, fromPromise } from "xstate";
import {
  createResolutionMachine,
  resolutionMachine,
  isTerminalEligible,
  isResponseCommitted,
  steersUsed,
  type CommitResponseInput,
  type ResolutionMachineEvent,
  type ResolutionOutput,
} from "../../machines/resolution.ts";
import { flattenValue } from "../../machines/state-value.ts";
import {
  assertFullCoverage,
  formatReport,
  UncoveredTransitionsError,
  runPathSuite,
  type StepInfo,
} from "../../machines/graph.ts";
import { RESPONSE_COMMITTED, RESPONSE_REFUSED } from "../support/alphabets.ts";
import { RESOLUTION_ALPHABET } from "../support/run-alphabets.ts";
import { expectCheckFires } from "../support/negative-control.ts";

/** Texts the machine asked its commit actor to make response, in order; each checked step drains it. */
const committed: string[] = [];
/** The resolution with a stand-in commit actor that records its input and never settles (paths send its result). */
const withCommitStub = (machine: ReturnType<typeof createResolutionMachine>) =>
  machine.provide({
    actors: {
      commitResponse: fromPromise<void, CommitResponseInput>(({ input }) => {
        committed.push(input.text);
        return new Promise<never>(() => undefined);
      }),
    },
  });

const events = RESOLUTION_ALPHABET;
// The spec's budget of hidden steers, written out here rather than read from the machine module,
// so a changed MAX_RESOLUTION_STEERS cannot move the expectation along with the machine.
const SPEC_STEERS = 2;

interface Trace {
  unresolvedCompletes: number;
  steers: number;
  commits: number;
  /** text of the last eligible complete draft */
  candidate: string | null;
  /** ids of the drafts discarded so far, in order */
  discarded: number[];
}

export function checkResolutionStep(step: StepInfo<ResolutionMachineEvent>, trace: Trace): string[] {
  const v: string[] = [];
  const { prev, event, next, emitted } = step;
  const before = flattenValue(prev.value);
  const after = flattenValue(next.value);
  const steers = emitted.filter((e) => e.type === "resolution.steer").length;
  const texts = committed.splice(0);
  const commits = texts.length;
  const exhaustedNow = emitted.filter((e) => e.type === "resolution.exhausted").length;
  trace.steers += steers;
  trace.commits += commits;
  if (step.index === 0 && (before !== "ineligible.fresh" || steersUsed(prev as never) !== 0))
    v.push(`I2.1 run did not start ineligible with zero attempts (${before})`);
  // I2.2
  const wasEligible = isTerminalEligible(prev as never);
  const isEligible = isTerminalEligible(next as never);
  if (!wasEligible && isEligible && !(event.type === "FINAL_ONLY" || (event.type === "PATCH_ACCEPTED" && event.final)))
    v.push(`I2.2 eligibility latched by ${JSON.stringify(event)}`);
  if ((event.type === "FINAL_ONLY" || (event.type === "PATCH_ACCEPTED" && event.final)) && prev.status === "active") {
    if (next.status !== "active" || commits || exhaustedNow) v.push("I2.2 final:true ended the turn");
  }
  if (wasEligible && !isEligible && next.status === "active")
    v.push(`I2.2 eligibility dropped on ${JSON.stringify(event)}`);
  // I2.3
  if (event.type === "PATCH_REJECTED" && (before !== after || emitted.length))
    v.push(`I2.3 a failed patch call consumed something (${before} → ${after})`);
  // I2.4
  if (event.type === "DRAFT" && event.ending !== "complete" && prev.status === "active") {
    if (before !== after) v.push(`I2.4 interrupted ${event.ending} ending changed ${before} → ${after}`);
    if (commits || steers) v.push(`I2.4 interrupted ${event.ending} ending steered or committed`);
  }
  // I2.5
  if (event.type === "DRAFT" && event.ending === "complete" && prev.status === "active" && !wasEligible) {
    trace.unresolvedCompletes++;
    const n = trace.unresolvedCompletes;
    if (!emitted.some((e) => e.type === "resolution.discardDraft")) v.push(`I2.5 unresolved draft ${n} not discarded`);
    if (n <= SPEC_STEERS && (steers !== 1 || after === "exhausted"))
      v.push(`I2.5 unresolved attempt ${n} must steer exactly once (steers=${steers}, ${after})`);
    if (n === SPEC_STEERS + 1 && (after !== "exhausted" || steers !== 0 || exhaustedNow !== 1))
      v.push(`I2.5 attempt ${n} must exhaust with one error and no steer (${after}, steers=${steers})`);
  }
  // Each steer and the final error name the attempt they answer (1, 2, then 3 exhausts).
  for (const e of emitted) {
    const { attempt, attempts } = e as { attempt?: number; attempts?: number };
    if (e.type === "resolution.steer" && attempt !== trace.unresolvedCompletes)
      v.push(`I2.5 steer names attempt ${attempt}, but this is unresolved attempt ${trace.unresolvedCompletes}`);
    if (e.type === "resolution.exhausted" && attempts !== SPEC_STEERS + 1)
      v.push(`I2.5 exhausted after ${attempts} attempts, not ${SPEC_STEERS + 1}`);
  }
  if (trace.steers > 2) v.push(`I2.5 ${trace.steers} steers on one path exceed the budget of 2`);
  const used = Math.min(trace.steers, SPEC_STEERS);
  // In every state: a refusal logged after final:true latched names the attempt it came at (spec 001 2.8).
  if (steersUsed(next as never) !== used) v.push(`I2.5 steersUsed disagrees with emitted steers in ${after}`);
  // I2.6
  if (commits && !(before === "candidate" && event.type === "TURN_END"))
    v.push(`I2.6 response committed from ${before} on ${event.type}`);
  if (after === "accepted" && before !== "committing") v.push(`I2.6 accepted from ${before}, not from committing`);
  if (after === "accepted" && event.type !== "xstate.done.actor.commit")
    v.push(`I2.6 accepted on ${event.type}, not on the commit actor's success`);
  if (trace.commits > 1) v.push("I2.6 response committed twice");
  if (isResponseCommitted(next as never) !== (after === "accepted"))
    v.push("I2.6 isResponseCommitted disagrees with the accepted state");
  if (event.type === "DRAFT" && event.ending === "complete" && wasEligible) trace.candidate = event.text ?? "";
  for (const text of texts) {
    if (text !== trace.candidate)
      v.push(`I2.6 the committed response is not the eligible draft's text (${JSON.stringify(text)})`);
  }
  // I2.8: a refused commit is said and accepts nothing; the run's output says whether its answer became response
  if (event.type === "xstate.error.actor.commit" && before === "committing") {
    if (after !== "uncommitted") v.push(`I2.8 a refused commit went to ${after}`);
    if (!emitted.some((e) => e.type === "resolution.commitFailed")) v.push("I2.8 a refused commit was silent");
  }
  const output = next.status === "done" && prev.status !== "done" ? (next.output as ResolutionOutput) : undefined;
  if (output && output.accepted !== (after === "accepted")) v.push(`I2.8 ${after} reports accepted=${output.accepted}`);
  // I2.9: an interrupted draft, and an unresolved complete one, is discarded: recorded with its id, and kept
  const discards = emitted.filter((e) => e.type === "resolution.discardDraft") as unknown as Array<{ id: number }>;
  // (a draft after the candidate, before turn_end, is not one Pi sends: the machine ignores it)
  const takesDrafts = before.startsWith("ineligible") || before === "eligible";
  const discarding = event.type === "DRAFT" && takesDrafts && (event.ending !== "complete" || !wasEligible);
  if (discarding) trace.discarded.push(event.id ?? 0);
  const expected = discarding ? [event.type === "DRAFT" ? (event.id ?? 0) : 0] : [];
  if (
    !isDeepStrictEqual(
      discards.map((e) => e.id),
      expected,
    )
  )
    v.push(`I2.9 ${JSON.stringify(event)} recorded discards ${JSON.stringify(discards)}, expected ids ${expected}`);
  if (!isDeepStrictEqual(next.context.discarded, trace.discarded))
    v.push(`I2.9 context.discarded ${JSON.stringify(next.context.discarded)}, expected ${trace.discarded}`);
  if (output && !isDeepStrictEqual(output.discarded, trace.discarded))
    v.push(`I2.9 the output's discarded ${JSON.stringify(output.discarded)}, expected ${trace.discarded}`);
  return v;
}

function runSuite(machine: ReturnType<typeof createResolutionMachine>) {
  return runPathSuite<ResolutionMachineEvent, Trace>(withCommitStub(machine), {
    spec: () => ({ events: () => events, serializeState: (s) => JSON.stringify(s.value), maxSimplePaths: 20_000 }),
    trace: () => ({ unresolvedCompletes: 0, steers: 0, commits: 0, candidate: null, discarded: [] }),
    check: (step, trace) => checkResolutionStep(step, trace),
  });
}

describe("resolution machine (generated paths)", () => {
  const { report, violations, steps } = runSuite(resolutionMachine);
  console.log(formatReport(report) + ` steps=${steps}`);

  it("I2.1–I2.6, I2.8, I2.9 hold after every step of every shortest, simple and edge path", () => {
    expect(report.paths.simple).toBeGreaterThan(10);
    expect(violations, violations.join("\n")).toEqual([]);
  });

  it("covers 100% of transitions (each guarded branch separately)", () => {
    expect(() => assertFullCoverage(report)).not.toThrow();
  });
});

describe("resolution negative controls", () => {
  it("I2.5 check catches an off-by-one steering bound (three steers instead of two, or one)", () => {
    for (const steers of [3, 1]) {
      const { violations } = runSuite(createResolutionMachine(steers));
      expect(
        violations.some((v) => v.startsWith("I2.5")),
        `a budget of ${steers} must violate I2.5`,
      ).toBe(true);
    }
  });

  it("I2.4 check catches an interrupted ending treated as a complete draft", () => {
    const leaky = resolutionMachine.provide({
      guards: {
        isInterruptedDraft: ({ event }) =>
          event.type === "DRAFT" && event.ending !== "complete" && event.ending !== "length",
      },
    });
    const { violations } = runSuite(leaky);
    expect(violations.some((v) => v.startsWith("I2.4"))).toBe(true);
  });

  it("I2.9 check catches a discarded draft that is not kept, or recorded without its id", () => {
    expectCheckFires(runSuite(resolutionMachine.provide({ actions: { keepDiscarded: () => {} } })).violations, "I2.9");
    const anonymous = emit({ type: "resolution.discardDraft", reason: "interrupted", id: 0 } as const) as never;
    expectCheckFires(
      runSuite(resolutionMachine.provide({ actions: { recordInterruptedDraft: anonymous } })).violations,
      "I2.9",
    );
  });

  it("a final:true guard forced false leaves the latch uncovered", () => {
    const { report } = runSuite(resolutionMachine.provide({ guards: { isFinalPatch: () => false } }));
    expect(report.uncovered).toContain("resolution.ineligible --PATCH_ACCEPTED [isFinalPatch]--> resolution.eligible");
    expect(() => assertFullCoverage(report)).toThrow(UncoveredTransitionsError);
  });
});

describe("resolution scenarios", () => {
  it("I2.5 the production machine's budget is two hidden steers: attempts 1 and 2 steer, attempt 3 exhausts", () => {
    const actor = createActor(withCommitStub(resolutionMachine)).start();
    const seen: unknown[] = [];
    actor.on("*", (e) => seen.push(e));
    for (const id of [7, 8, 9]) actor.send({ type: "DRAFT", ending: "complete", text: `draft ${id}`, id });
    expect(seen, "I2.5 exactly two steers, then one error; I2.9 each discard names its draft").toEqual([
      { type: "resolution.discardDraft", reason: "unresolved", id: 7 },
      { type: "resolution.steer", attempt: 1 },
      { type: "resolution.discardDraft", reason: "unresolved", id: 8 },
      { type: "resolution.steer", attempt: 2 },
      { type: "resolution.discardDraft", reason: "unresolved", id: 9 },
      { type: "resolution.exhausted", attempts: 3 },
    ]);
    expect(actor.getSnapshot().output, "I2.9 the exhausted answer's output lists its discards").toEqual({
      accepted: false,
      discarded: [7, 8, 9],
    });
    expect(actor.getSnapshot().value).toBe("exhausted");
    expect(actor.getSnapshot().status, "I2.5 steering ends once exhausted").toBe("done");
    expect(steersUsed(actor.getSnapshot())).toBe(2);
    actor.stop();
  });

  it("I2.7 a later successful final:true after two steers permits the final answer", () => {
    const actor = createActor(withCommitStub(resolutionMachine)).start();
    const seen: string[] = [];
    actor.on("*", (e) => seen.push(e.type));
    actor.send({ type: "DRAFT", ending: "complete", id: 1 });
    actor.send({ type: "PATCH_REJECTED" });
    actor.send({ type: "DRAFT", ending: "aborted", id: 2, stopReason: "aborted" });
    actor.send({ type: "DRAFT", ending: "complete", id: 3 });
    actor.send({ type: "PATCH_ACCEPTED", final: true });
    actor.send({ type: "DRAFT", ending: "complete", id: 4 });
    actor.send({ type: "TURN_END" });
    expect(actor.getSnapshot().value, "I2.7 final:true after retries commits the answer").toBe("committing");
    actor.send(RESPONSE_COMMITTED);
    expect(actor.getSnapshot().value, "I2.7 final:true after retries must permit the answer").toBe("accepted");
    expect(actor.getSnapshot().output, "I2.9 the accepted draft is not discarded").toEqual({
      accepted: true,
      discarded: [1, 2, 3],
    });
    expect(seen.filter((t) => t === "resolution.steer")).toHaveLength(2);
    actor.stop();
  });

  it("I2.8 a response the store refuses is said, accepts nothing, and the run reports it not accepted", () => {
    committed.length = 0;
    const actor = createActor(withCommitStub(resolutionMachine)).start();
    const seen: unknown[] = [];
    actor.on("*", (e) => seen.push(e));
    actor.send({ type: "FINAL_ONLY" });
    actor.send({ type: "DRAFT", ending: "complete", text: "done." });
    actor.send({ type: "TURN_END" });
    expect(committed.splice(0)).toEqual(["done."]);
    actor.send(RESPONSE_REFUSED);
    expect(actor.getSnapshot().value).toBe("uncommitted");
    expect(actor.getSnapshot().output).toEqual({ accepted: false, discarded: [] });
    expect(seen).toEqual([{ type: "resolution.commitFailed", error: "store refused the response" }]);
    actor.stop();
  });

  it("I2.2 final:true does not end the turn: tools and later patches continue while eligible", () => {
    const actor = createActor(withCommitStub(resolutionMachine)).start();
    actor.send({ type: "FINAL_ONLY" });
    actor.send({ type: "TURN_END" });
    actor.send({ type: "PATCH_ACCEPTED", final: false });
    expect(actor.getSnapshot().value, "I2.2 eligibility stays latched").toBe("eligible");
    expect(actor.getSnapshot().status).toBe("active");
    actor.stop();
  });
});
