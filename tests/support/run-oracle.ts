// The run machine's (M5) oracle: what each event of a run means, kept independently of the machine
// (the framing latches an adapter would otherwise hold, the specification it would build, and a
// small model of the resolution each answer invokes, with the spec's budget written out), checked
// against the run's snapshot after every step. Invariants (each violation starts with its id):
//   I5.1 the run is open from its start until agent_settled, which ends it; agent_start (a
//        continuation) changes nothing;
//   I5.2 how the run began frames it: a prompt's run awaits its prompt, a run agent_start alone began
//        awaits the custom message that started it, a message Pi announced frames it at once;
//   I5.3 a user message inside an equipped run (not the prompt it awaits) is added to its
//        specification, in order; nothing else adds;
//   I5.4 the custom message that started an unannounced equipped run names its source (not State
//        Flow's own anchor); no other message names one;
//   I5.5 the specification: a prompt replaces the one given, a message-started run keeps its request
//        and additions and says it was message-started; an ordinary run leaves the one given untouched;
//        a prompt keeps the given request as an interrupted one when its run left it unanswered (at most
//        five kept, the oldest dropped and counted), and the interrupted ones carry over unchanged otherwise;
//   I5.6 an equipped run resolves one answer at a time: its first invoked at once, a fresh one only
//        after the previous settled and a user message came; events reach the answer being resolved;
//        an ordinary run resolves none;
//   I5.7 the discarded drafts (runDiscarded) are every settled answer's and the current one's, accumulated;
//   I5.8 an equipped run is prepared once, in order: the shared-state check is invoked at its start, then
//        Knowledge discovery once the check settled; an ordinary run invokes neither; isPrepared is true
//        exactly when neither runs; a failed check and a failed discovery are each reported once;
//   I5.9 agent_settled ends the run with output {accepted: some answer accepted, specification}, where
//        an equipped run's request is answered (no interrupted ones left) exactly when its newest answer
//        was accepted, and open otherwise; it stops the answer being resolved (unaccepted) and the
//        preparation;
//   I5.10 the check's finding is the run's freshness from then on (unavailable, with the reason, when
//        the check failed; unchecked before and in an ordinary run);
//   I5.11 the run keeps the newest patch_state refusal of the answer being resolved (its reason, or
//        "(no reason given)"), until a patch or final:true is accepted: an exhausted answer says it.
import { isDeepStrictEqual } from "node:util";
import type { AnyActorRef, AnyMachineSnapshot } from "xstate";
import type { StepInfo } from "../../machines/graph.ts";
import type { ResolutionEvent } from "../../machines/resolution.ts";
import { isPrepared, runDiscarded, type Freshness, type RunInput, type RunMachineEvent } from "../../machines/run.ts";
import type { Specification } from "../../machines/specification.ts";
import { COMMITS, REFUSED } from "./run-alphabets.ts";

/** The spec's budget of hidden steers: the third unresolved draft exhausts the answer. */
const SPEC_STEERS = 2;

/** What the stand-in actors and host actions were asked, in order (drained by each checked step). */
export const performed: string[] = [];

interface AnswerModel {
  latched: boolean;
  unresolved: number;
  candidate: string | null;
  committing: boolean;
  discarded: number[];
}

export interface RunTrace {
  open: boolean;
  promptPending: boolean;
  sourcePending: boolean;
  spec: Specification;
  /** The answer being resolved (null: none, or the last one settled). */
  answer: AnswerModel | null;
  /** The resolution actor of that answer (to tell a fresh one apart). */
  child: AnyActorRef | null;
  /** Discarded drafts of the answers already settled. */
  kept: number[];
  accepted: boolean;
  /** The newest answer settled accepted (cleared when a user message asks for another). */
  answered: boolean;
  preparing: "none" | "refreshing" | "discovering" | "ready";
  freshness: Freshness;
  refusal: string | null;
  /** Checks the stand-in started when the actor started (see `started`). */
  refreshes: number;
}

const freshAnswer = (): AnswerModel => ({
  latched: false,
  unresolved: 0,
  candidate: null,
  committing: false,
  discarded: [],
});

/** The spec's bound on interrupted requests carried. */
const SPEC_INTERRUPTED = 5;

/** What a prompt makes of the specification the previous run left (the interrupted requests written out). */
function promptSpec(given: Specification, text: string): Specification {
  const open = given.unanswered && (given.request.trim() !== "" || given.added.length > 0);
  const all = open ? [...given.interrupted, { request: given.request, added: given.added }] : given.interrupted;
  const over = Math.max(0, all.length - SPEC_INTERRUPTED);
  return {
    request: text,
    added: [],
    startedBy: null,
    unanswered: false,
    interrupted: all.slice(over),
    dropped: given.dropped + over,
  };
}

export function initialTrace(input: RunInput): RunTrace {
  const { opening, equipped, specification: given } = input;
  const spec: Specification = !equipped
    ? given
    : opening.kind === "prompt"
      ? promptSpec(given, opening.text)
      : { ...given, startedBy: { source: "source" in opening ? opening.source : null } };
  return {
    open: true,
    promptPending: opening.kind === "prompt",
    sourcePending: opening.kind === "unannounced",
    spec,
    answer: equipped ? freshAnswer() : null,
    child: null,
    kept: [],
    accepted: false,
    answered: false,
    preparing: equipped ? "refreshing" : "none",
    freshness: { kind: "unchecked" },
    refusal: null,
    refreshes: 0,
  };
}

/** The runPathSuite `started` hook: the checks asked for when the run began. */
export function started(trace: RunTrace): void {
  const work = performed.splice(0);
  trace.refreshes = work.filter((p) => p === "refresh").length;
  if (work.includes("discover")) trace.refreshes = -1; // a discovery before the check: I5.8
}

/** The answer model's reaction to a forwarded event: its verdict when the answer settles. */
function resolve(a: AnswerModel, e: ResolutionEvent): { accepted: boolean } | null {
  if (a.committing) return null;
  if (a.candidate !== null) {
    if (e.type !== "TURN_END") return null;
    a.committing = true;
    return a.candidate === COMMITS ? { accepted: true } : a.candidate === REFUSED ? { accepted: false } : null;
  }
  if (e.type === "FINAL_ONLY" || (e.type === "PATCH_ACCEPTED" && e.final)) a.latched = true;
  if (e.type !== "DRAFT") return null;
  if (e.ending !== "complete") a.discarded.push(e.id ?? 0);
  else if (a.latched) a.candidate = e.text ?? "";
  else {
    a.discarded.push(e.id ?? 0);
    if (++a.unresolved > SPEC_STEERS) return { accepted: false };
  }
  return null;
}

function settleAnswer(trace: RunTrace, verdict: { accepted: boolean; discarded: readonly number[] }): void {
  trace.kept.push(...verdict.discarded);
  trace.accepted ||= verdict.accepted;
  trace.answered = verdict.accepted;
  trace.answer = null;
}

const FORWARDED = new Set(["PATCH_ACCEPTED", "FINAL_ONLY", "PATCH_REJECTED", "DRAFT", "TURN_END"]);

/** Advances the oracle by one event (what it should mean); returns what it expects the step to have done. */
function advance(trace: RunTrace, event: RunMachineEvent, input: RunInput) {
  const expect = { failures: 0, checkFailures: 0, discoveries: 0, freshAnswer: false };
  if (!trace.open) return expect;
  switch (event.type) {
    case "USER_MESSAGE":
      if (trace.promptPending) trace.promptPending = false;
      else if (input.equipped) trace.spec = { ...trace.spec, added: [...trace.spec.added, event.text] };
      if (input.equipped && trace.answer === null) {
        trace.answer = freshAnswer();
        trace.answered = false;
        expect.freshAnswer = true;
      }
      break;
    case "CUSTOM_MESSAGE":
      if (!trace.sourcePending) break;
      trace.sourcePending = false;
      if (input.equipped && !event.ownAnchor) trace.spec = { ...trace.spec, startedBy: { source: event.customType } };
      break;
    case "SETTLED":
      Object.assign(trace, { open: false, promptPending: false, sourcePending: false });
      if (trace.preparing !== "none") trace.preparing = "ready";
      trace.answer = null; // an answer still being resolved ends unaccepted
      break;
    case "xstate.done.actor.resolution":
      if (trace.answer) settleAnswer(trace, event.output);
      break;
    case "xstate.done.actor.freshness":
    case "xstate.error.actor.freshness":
      if (trace.preparing !== "refreshing") break;
      trace.preparing = "discovering";
      expect.discoveries = 1;
      if (event.type === "xstate.done.actor.freshness") trace.freshness = event.output;
      else {
        trace.freshness = { kind: "unavailable", reason: (event.error as Error).message };
        expect.checkFailures = 1;
      }
      break;
    case "xstate.done.actor.knowledge":
    case "xstate.error.actor.knowledge":
      if (trace.preparing !== "discovering") break;
      trace.preparing = "ready";
      if (event.type === "xstate.error.actor.knowledge") expect.failures = 1;
      break;
    default:
      if (trace.answer && event.type === "PATCH_REJECTED") trace.refusal = event.reason ?? "(no reason given)";
      if (trace.answer && (event.type === "PATCH_ACCEPTED" || event.type === "FINAL_ONLY")) trace.refusal = null;
      if (trace.answer && FORWARDED.has(event.type)) {
        const verdict = resolve(trace.answer, event as ResolutionEvent);
        if (verdict) settleAnswer(trace, { ...verdict, discarded: trace.answer.discarded });
      }
  }
  return expect;
}

const region = (s: AnyMachineSnapshot, name: string): unknown =>
  s.status === "active" ? (s.value as { open?: Record<string, unknown> }).open?.[name] : undefined;

/** Returns violations (each prefixed with its invariant id) for one step. */
export function checkRunStep(step: StepInfo<RunMachineEvent>, trace: RunTrace, input: RunInput): string[] {
  const v: string[] = [];
  const { prev, event, next } = step;
  const work = performed.splice(0);
  const wasOpen = trace.open;
  if (step.index === 0) v.push(...checkStart(prev, trace, input));
  const expected = advance(trace, event, input);
  // I5.1
  if (trace.open && !(next.status === "active" && next.matches("open")))
    v.push(`I5.1 the run is not open after ${event.type} (${next.status} ${JSON.stringify(next.value)})`);
  if (!trace.open && !(next.status === "done" && next.value === "ended"))
    v.push(`I5.1 the run did not end on agent_settled (${next.status} ${JSON.stringify(next.value)})`);
  if (event.type === "AGENT_START" && !isDeepStrictEqual([prev.value, prev.context], [next.value, next.context]))
    v.push(`I5.1 agent_start changed the run (${JSON.stringify(prev.value)} → ${JSON.stringify(next.value)})`);
  const spec = next.context.specification as Specification;
  if (trace.open) {
    // I5.2
    const framing = trace.promptPending ? "awaitingPrompt" : trace.sourcePending ? "awaitingSource" : "framed";
    if (region(next, "framing") !== framing)
      v.push(`I5.2 after ${event.type} the run is ${region(next, "framing")}, expected ${framing}`);
  }
  // I5.3–I5.5: the specification (also after the run ended: it is the run's output)
  if (!input.equipped && !isDeepStrictEqual(spec, input.specification))
    v.push(`I5.5 an ordinary run changed its specification on ${event.type}: ${JSON.stringify(spec)}`);
  if (!isDeepStrictEqual(spec.added, trace.spec.added))
    v.push(`I5.3 after ${event.type} the additions are ${JSON.stringify(spec.added)}, expected ${trace.spec.added}`);
  if (!isDeepStrictEqual(spec.startedBy, trace.spec.startedBy))
    v.push(`I5.4 after ${JSON.stringify(event)} startedBy is ${JSON.stringify(spec.startedBy)}`);
  if (spec.request !== trace.spec.request) v.push(`I5.5 the request is ${JSON.stringify(spec.request)}`);
  if (trace.open && !isDeepStrictEqual([spec.interrupted, spec.dropped], [trace.spec.interrupted, trace.spec.dropped]))
    v.push(`I5.5 after ${event.type} the interrupted requests are ${JSON.stringify([spec.interrupted, spec.dropped])}`);
  if (trace.open) v.push(...checkAnswer(next, trace, input, expected.freshAnswer, event));
  // I5.8
  const preparing = trace.preparing === "refreshing" || trace.preparing === "discovering";
  if (isPrepared(next as never) !== !preparing)
    v.push(`I5.8 isPrepared is ${preparing ? "true" : "false"} while ${trace.preparing}`);
  if (trace.open && (next.children.freshness !== undefined) !== (trace.preparing === "refreshing"))
    v.push(`I5.8 the check actor is ${next.children.freshness ? "running" : "missing"} while ${trace.preparing}`);
  if (trace.open && (next.children.knowledge !== undefined) !== (trace.preparing === "discovering"))
    v.push(`I5.8 the discovery actor is ${next.children.knowledge ? "running" : "missing"} while ${trace.preparing}`);
  const count = (what: string) => work.filter((w) => w === what).length;
  if (count("knowledge-failed") !== expected.failures)
    v.push(
      `I5.8 ${event.type} reported a failed discovery ${count("knowledge-failed")}× (expected ${expected.failures})`,
    );
  if (count("freshness-failed") !== expected.checkFailures)
    v.push(`I5.8 ${event.type} reported a failed check ${count("freshness-failed")}×`);
  if (count("discover") !== expected.discoveries)
    v.push(`I5.8 ${event.type} started ${count("discover")} discoveries (expected ${expected.discoveries})`);
  if (count("refresh") > 0) v.push(`I5.8 ${event.type} started another shared-state check`);
  // I5.10
  if (!isDeepStrictEqual(next.context.freshness, trace.freshness))
    v.push(`I5.10 after ${event.type} the freshness is ${JSON.stringify(next.context.freshness)}`);
  // I5.11
  if (next.context.refusal !== trace.refusal)
    v.push(`I5.11 after ${JSON.stringify(event)} the refusal kept is ${JSON.stringify(next.context.refusal)}`);
  // I5.9
  if (wasOpen && !trace.open) {
    const left = !input.equipped
      ? trace.spec
      : trace.answered
        ? { ...trace.spec, unanswered: false, interrupted: [], dropped: 0 }
        : { ...trace.spec, unanswered: true };
    if (!isDeepStrictEqual(next.output, { accepted: trace.accepted, specification: left }))
      v.push(`I5.9 the run ended with ${JSON.stringify(next.output)}, expected accepted=${trace.accepted}`);
    for (const [id, child] of Object.entries(prev.children as Record<string, AnyActorRef>))
      if (child.getSnapshot().status !== "stopped" && child.getSnapshot().status !== "done")
        v.push(`I5.9 the run ended with its ${id} actor still ${child.getSnapshot().status}`);
  }
  return v;
}

function checkStart(initial: AnyMachineSnapshot, trace: RunTrace, input: RunInput): string[] {
  const v: string[] = [];
  if (trace.refreshes !== (input.equipped ? 1 : 0))
    v.push(
      `I5.8 the run started ${trace.refreshes} shared-state checks (equipped=${input.equipped}; -1: discovery first)`,
    );
  const answer = region(initial, "answer");
  if (answer !== (input.equipped ? "resolving" : "ordinary"))
    v.push(`I5.6 an ${input.equipped ? "equipped" : "ordinary"} run began ${answer}`);
  trace.child = (initial.children.resolution as AnyActorRef | undefined) ?? null;
  if (!isDeepStrictEqual(initial.context.specification, trace.spec))
    v.push(`I5.5 the run began with ${JSON.stringify(initial.context.specification)}`);
  return v;
}

function checkAnswer(
  next: AnyMachineSnapshot,
  trace: RunTrace,
  input: RunInput,
  fresh: boolean,
  event: RunMachineEvent,
): string[] {
  const v: string[] = [];
  const expected = !input.equipped ? "ordinary" : trace.answer ? "resolving" : "resolved";
  const answer = region(next, "answer");
  if (answer !== expected) v.push(`I5.6 after ${JSON.stringify(event)} the answer is ${answer}, expected ${expected}`);
  const child = (next.children.resolution as AnyActorRef | undefined) ?? null;
  if ((child !== null) !== (trace.answer !== null))
    v.push(`I5.6 a resolution actor is ${child ? "running" : "missing"} with the answer ${answer}`);
  if (child !== null && child !== trace.child && !fresh)
    v.push(`I5.6 a fresh resolution was invoked on ${event.type} without a settled answer and a user message`);
  if (fresh && child !== null && child === trace.child) v.push("I5.6 a user message after a settled answer reused it");
  trace.child = child;
  const discarded = [...trace.kept, ...(trace.answer?.discarded ?? [])];
  const actual = runDiscarded(next as never);
  if (!isDeepStrictEqual([...actual].sort(), [...new Set(discarded)].sort()))
    v.push(`I5.7 after ${event.type} the discarded drafts are [${[...actual]}], expected [${discarded}]`);
  return v;
}
