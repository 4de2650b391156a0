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
//   I5.6 an equipped run resolves one answer at a time: its first invoked at once, a fresh one only
//        after the previous settled and a user message came; events reach the answer being resolved;
//        an ordinary run resolves none;
//   I5.7 the discarded drafts (runDiscarded) are every settled answer's and the current one's, accumulated;
//   I5.8 Knowledge discovery is invoked once, only by an equipped run; isKnowledgeSettled is true exactly
//        when it is not discovering; a failed discovery is reported once;
//   I5.9 agent_settled ends the run with output {accepted: some answer accepted, specification}, and
//        stops the answer being resolved (unaccepted) and the discovery.
import { isDeepStrictEqual } from "node:util";
import type { AnyActorRef, AnyMachineSnapshot } from "xstate";
import type { StepInfo } from "../../machines/graph.ts";
import type { ResolutionEvent } from "../../machines/resolution.ts";
import { isKnowledgeSettled, runDiscarded, type RunInput, type RunMachineEvent } from "../../machines/run.ts";
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
  discovering: boolean;
  /** Discoveries the stand-in started when the actor started (see `started`). */
  discoveries: number;
}

const freshAnswer = (): AnswerModel => ({
  latched: false,
  unresolved: 0,
  candidate: null,
  committing: false,
  discarded: [],
});

export function initialTrace(input: RunInput): RunTrace {
  const { opening, equipped, specification: given } = input;
  const spec: Specification = !equipped
    ? given
    : opening.kind === "prompt"
      ? { request: opening.text, added: [], startedBy: null }
      : {
          request: given.request,
          added: given.added,
          startedBy: { source: "source" in opening ? opening.source : null },
        };
  return {
    open: true,
    promptPending: opening.kind === "prompt",
    sourcePending: opening.kind === "unannounced",
    spec,
    answer: equipped ? freshAnswer() : null,
    child: null,
    kept: [],
    accepted: false,
    discovering: equipped,
    discoveries: 0,
  };
}

/** The runPathSuite `started` hook: the discoveries asked for when the run began. */
export function started(trace: RunTrace): void {
  trace.discoveries = performed.splice(0).filter((p) => p === "discover").length;
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
  trace.answer = null;
}

const FORWARDED = new Set(["PATCH_ACCEPTED", "FINAL_ONLY", "PATCH_REJECTED", "DRAFT", "TURN_END"]);

/** Advances the oracle by one event (what it should mean); returns what it expects the step to have done. */
function advance(trace: RunTrace, event: RunMachineEvent, input: RunInput) {
  const expect = { failures: 0, freshAnswer: false };
  if (!trace.open) return expect;
  switch (event.type) {
    case "USER_MESSAGE":
      if (trace.promptPending) trace.promptPending = false;
      else if (input.equipped) trace.spec = { ...trace.spec, added: [...trace.spec.added, event.text] };
      if (input.equipped && trace.answer === null) {
        trace.answer = freshAnswer();
        expect.freshAnswer = true;
      }
      break;
    case "CUSTOM_MESSAGE":
      if (!trace.sourcePending) break;
      trace.sourcePending = false;
      if (input.equipped && !event.ownAnchor) trace.spec = { ...trace.spec, startedBy: { source: event.customType } };
      break;
    case "SETTLED":
      Object.assign(trace, { open: false, promptPending: false, sourcePending: false, discovering: false });
      trace.answer = null; // an answer still being resolved ends unaccepted
      break;
    case "xstate.done.actor.resolution":
      if (trace.answer) settleAnswer(trace, event.output);
      break;
    case "xstate.done.actor.knowledge":
      trace.discovering = false;
      break;
    case "xstate.error.actor.knowledge":
      if (trace.discovering) expect.failures = 1;
      trace.discovering = false;
      break;
    default:
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
  if (trace.open) v.push(...checkAnswer(next, trace, input, expected.freshAnswer, event));
  // I5.8
  if (isKnowledgeSettled(next as never) !== !trace.discovering)
    v.push(
      `I5.8 isKnowledgeSettled is ${!trace.discovering ? "false" : "true"} while discovering=${trace.discovering}`,
    );
  if (trace.open && (next.children.knowledge !== undefined) !== trace.discovering)
    v.push(`I5.8 the discovery actor ${trace.discovering ? "is missing" : "outlived discovery"} after ${event.type}`);
  const failures = work.filter((w) => w === "knowledge-failed").length;
  if (failures !== expected.failures)
    v.push(`I5.8 ${event.type} reported a failed discovery ${failures}× (expected ${expected.failures})`);
  if (work.includes("discover")) v.push(`I5.8 ${event.type} started another discovery`);
  // I5.9
  if (wasOpen && !trace.open) {
    if (!isDeepStrictEqual(next.output, { accepted: trace.accepted, specification: trace.spec }))
      v.push(`I5.9 the run ended with ${JSON.stringify(next.output)}, expected accepted=${trace.accepted}`);
    for (const [id, child] of Object.entries(prev.children as Record<string, AnyActorRef>))
      if (child.getSnapshot().status !== "stopped" && child.getSnapshot().status !== "done")
        v.push(`I5.9 the run ended with its ${id} actor still ${child.getSnapshot().status}`);
  }
  return v;
}

function checkStart(initial: AnyMachineSnapshot, trace: RunTrace, input: RunInput): string[] {
  const v: string[] = [];
  if (trace.discoveries !== (input.equipped ? 1 : 0))
    v.push(`I5.8 the run started ${trace.discoveries} discoveries (equipped=${input.equipped})`);
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
