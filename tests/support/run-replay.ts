// The run machine's (M5) generated paths as Pi runs, for tests/adapters/pi/model-based-run.test.ts.
// Pure: no Pi. The paths are the machine's shortest paths for every way a run begins (xstate/graph
// with the pure suite's alphabet and stand-in actors); each is put in the order Pi produces a run's
// events in and translated into the run's Pi-level events, which the replay compares with what the
// adapter's own run actor took. Pi's order (observed on 0.84.4 and 1.6.0, and what the adapter relies
// on): the run's opening message first (the prompt; or the custom message that started it), then
// State Flow's anchor (equipped runs), then the run's preparation — the shared-state check's end, then
// Knowledge discovery's — which the runtime awaits before the run's first context; an answer's result
// needs inferences; agent_settled ends the run.
import { createActor, fromCallback, fromPromise, type AnyEventObject, type AnyStateMachine } from "xstate";
import { generatePaths } from "../../machines/graph.ts";
import { resolutionMachine } from "../../machines/resolution.ts";
import { runMachine, type RunInput, type RunMachineEvent } from "../../machines/run.ts";
import { RESPONSE_COMMITTED } from "./alphabets.ts";
import { runWithPendingActors } from "./episode-stubs.ts";
import { OTHER_MESSAGE, RUN_EVENTS, RUN_INPUTS } from "./run-alphabets.ts";

export type OpeningKind = RunInput["opening"]["kind"];
/** The custom message another extension starts a run with (the alphabet's OTHER_MESSAGE). */
export const SOURCE = "scheduler";
export const ANCHOR = "state-flow-run";
export const STEER = "state-flow-resolution";

const never = () => new Promise<never>(() => undefined);
/** The answer's commit succeeds at once (the real store accepts every answer these runs give). */
const committing = resolutionMachine.provide({
  actors: { commitResponse: fromCallback(({ sendBack }) => sendBack(RESPONSE_COMMITTED)) as never },
});
/** A run machine (the real one, or a broken one for a negative control) as the replay's pure model. */
export const pureModel = (machine: AnyStateMachine = runMachine): AnyStateMachine =>
  machine.provide({
    actors: {
      resolution: committing,
      refreshShared: fromPromise<never>(never),
      discoverKnowledge: fromPromise<void>(never),
    },
  });
/** The pure suite's stand-ins (nothing settles on its own): a path delivers the actors' results itself. */
const pathModel = runWithPendingActors;

/** Event identity as the machine's guards and the comparison see it (draft ids and texts are world data). */
export function eventKey(e: AnyEventObject): string {
  const x = e as { type: string; text?: string; customType?: string; ending?: string; final?: boolean };
  const output = (e as { output?: { accepted?: boolean } }).output;
  switch (x.type) {
    case "USER_MESSAGE":
      return `USER(${x.text})`;
    case "CUSTOM_MESSAGE":
      return `CUSTOM(${x.customType})`;
    case "DRAFT":
      return `DRAFT(${x.ending})`;
    case "PATCH_ACCEPTED":
      return `PATCH_ACCEPTED(final=${x.final})`;
    case "xstate.done.actor.resolution":
      return `ANSWER_DONE(accepted=${output?.accepted})`;
    case "xstate.done.actor.freshness":
      return "FRESHNESS_DONE";
    case "xstate.error.actor.freshness":
      return "FRESHNESS_FAILED";
    case "xstate.done.actor.knowledge":
      return "KNOWLEDGE_DONE";
    case "xstate.error.actor.knowledge":
      return "KNOWLEDGE_FAILED";
    default:
      return x.type;
  }
}
export const KNOWLEDGE = "KNOWLEDGE_DONE";
/** The shared-state check's end (its finding is the world's: one session alone finds nothing moved). */
export const FRESHNESS = "FRESHNESS_DONE";
/** The preparation's ends: they float (Pi's order puts them before the run's first context). */
export const PREPARATION = new Set([FRESHNESS, KNOWLEDGE]);
const isPreparation = (e: AnyEventObject) =>
  e.type === "xstate.done.actor.freshness" || e.type === "xstate.done.actor.knowledge";
export const show = (events: readonly AnyEventObject[]) => events.map(eventKey).join(" → ") || "(no events)";
export const label = (input: RunInput) => `${input.opening.kind}, ${input.equipped ? "equipped" : "ordinary"}`;

/** A message delivered inside the run: a user's steer or follow-up, or another extension's custom message. */
export interface Addition {
  kind: "user" | "custom";
  text: string;
}

/** One faux model turn of a replayed run, what Pi delivers while it streams, and the run events Pi reports. */
export interface Turn {
  kind: "discarded" | "final" | "answer" | "interrupted" | "plain" | "carrier";
  deliver?: { addition: Addition; as: "steer" | "followUp" };
  events: string[];
}

/** A path as one Pi run: the opening's events, then each turn (an inference) and its events, then SETTLED. */
export interface RunPlan {
  opening: string[];
  turns: Turn[];
  /** Every event the adapter's run actor must take, in order (discovery's end floats, see the test). */
  expected: string[];
}

const additionKey = (a: Addition) => (a.kind === "user" ? `USER(${a.text})` : `CUSTOM(${SOURCE})`);

/**
 * The run Pi makes of a path: its opening, an accepted answer when the path has one, the path's last
 * message delivered inside the run (steered in after a carrier turn, or a follow-up after the
 * answer), then Pi ends it.
 */
export function planRun(input: RunInput, text: string, answered: boolean, addition?: Addition): RunPlan {
  const opening = [input.opening.kind === "prompt" ? `USER(${text})` : `CUSTOM(${SOURCE})`];
  if (input.equipped) opening.push(`CUSTOM(${ANCHOR})`, FRESHNESS, KNOWLEDGE);
  const turns: Turn[] = [];
  if (addition && !answered)
    turns.push({ kind: "carrier", deliver: { addition, as: "steer" }, events: ["TURN_END", additionKey(addition)] });
  if (input.equipped && answered)
    turns.push(
      // a complete answer without final:true is discarded and steered; the next is accepted after a final patch
      { kind: "discarded", events: ["DRAFT(complete)", "TURN_END", `CUSTOM(${STEER})`] },
      { kind: "final", events: ["FINAL_ONLY", "TURN_END"] },
      {
        kind: "answer",
        ...(addition ? { deliver: { addition, as: "followUp" as const } } : {}),
        events: [
          "DRAFT(complete)",
          "TURN_END",
          "ANSWER_DONE(accepted=true)",
          ...(addition ? [additionKey(addition)] : []),
        ],
      },
    );
  // A user message after the answer asks for another one; the run ends before it is resolved.
  const owed = input.equipped && (!answered || addition?.kind === "user");
  if (owed) turns.push({ kind: "interrupted", events: ["DRAFT(error)", "TURN_END"] });
  else if (!input.equipped || addition) turns.push({ kind: "plain", events: ["DRAFT(complete)", "TURN_END"] });
  return { opening, turns, expected: [...opening, ...turns.flatMap((t) => t.events), "SETTLED"] };
}

/** The run events of a plan as the pure model takes them (an answer's result comes from its own resolution). */
export function planEvents(plan: RunPlan): RunMachineEvent[] {
  return plan.expected.flatMap((key): RunMachineEvent[] => {
    const inner = /^\w+\((.*)\)$/.exec(key)?.[1] ?? "";
    if (key.startsWith("USER(")) return [{ type: "USER_MESSAGE", text: inner }];
    if (key.startsWith("CUSTOM(")) return [{ type: "CUSTOM_MESSAGE", customType: inner, ownAnchor: inner === ANCHOR }];
    if (key.startsWith("DRAFT("))
      return [{ type: "DRAFT", ending: inner as never, text: `${inner} draft`, id: 0, stopReason: "stop" }];
    if (key === FRESHNESS)
      return [{ type: "xstate.done.actor.freshness", actorId: "freshness", output: { kind: "current" } }];
    if (key === KNOWLEDGE) return [{ type: "xstate.done.actor.knowledge", actorId: "knowledge", output: undefined }];
    if (key.startsWith("ANSWER_DONE")) return [];
    return [{ type: key } as RunMachineEvent];
  });
}

/** The state values a model visits when fed `events` from `input` (the initial one first). */
function visited(model: AnyStateMachine, input: RunInput, events: readonly AnyEventObject[]): string[] {
  const actor = createActor(model, { input });
  const values: string[] = [];
  actor.subscribe((s) => void values.push(JSON.stringify(s.value)));
  actor.start();
  for (const e of events) if (actor.getSnapshot().status === "active") actor.send(e);
  actor.stop();
  return values.filter((v, i) => v !== values[i - 1]);
}

/** The path in Pi's order: the preparation's ends moved to just after the run's opening message (regions commute). */
function inPiOrder(input: RunInput, path: readonly RunMachineEvent[]): RunMachineEvent[] {
  const rest = path.filter((e) => !isPreparation(e));
  if (rest.length === path.length) return [...path];
  const first = rest[0];
  const openedBy = input.opening.kind === "prompt" ? "USER_MESSAGE" : "CUSTOM_MESSAGE";
  const at = input.opening.kind !== "message" && first?.type === openedBy ? 1 : 0;
  return [...rest.slice(0, at), ...path.filter(isPreparation), ...rest.slice(at)];
}

/** Why Pi cannot reach a state the path visits (the first one its run does not visit), or null. */
function unreachedReason(input: RunInput, path: readonly RunMachineEvent[], plan: RunPlan): string | null {
  const wanted = visited(pathModel, input, path);
  const reached = visited(pureModel(), input, planEvents(plan));
  let at = 0;
  for (const value of wanted) {
    at = reached.indexOf(value, at);
    if (at >= 0) continue;
    const v = JSON.parse(value) as { open?: { framing: string; answer: string; preparation: string } };
    if (v.open?.framing === "awaitingPrompt")
      return "Pi reports the prompt (message_end) before the run's first context: nothing of the run comes before it";
    if (v.open?.framing === "awaitingSource")
      return "Pi 0.84 delivers the custom message that started the run first, before the anchor and the first context";
    if (v.open?.answer === "resolved" && ["refreshing", "discovering"].includes(v.open.preparation))
      return "an answer cannot be resolved while the run is prepared: the runtime awaits it before the first context";
    return `the Pi run never reaches ${value}`;
  }
  return null;
}

export interface GeneratedRunPath {
  input: RunInput;
  /** The path as generated. */
  events: RunMachineEvent[];
  /** The path in Pi's order (discovery's end moved), when producible. */
  piOrder: RunMachineEvent[];
  reordered: boolean;
  /** An edge tour that ends in a message delivered inside the run (see additionTours). */
  tour?: boolean;
  /** Why Pi cannot produce it (a skip), or null. */
  unproducible: string | null;
}

function dedupeByPrefix(paths: GeneratedRunPath[]): GeneratedRunPath[] {
  const keys = paths.map((p) => p.piOrder.map((e) => JSON.stringify(e)));
  return paths.filter(
    (_, i) =>
      !keys.some((other, j) => j !== i && other.length > keys[i]!.length && keys[i]!.every((k, n) => k === other[n])),
  );
}

/** Every input's shortest paths: generated count, the producible ones deduplicated by prefix, the unproducible. */
export function runPaths() {
  let generated = 0;
  const distinct: GeneratedRunPath[] = [];
  const unproducible: GeneratedRunPath[] = [];
  for (const input of RUN_INPUTS) {
    const shortest = generatePaths<RunMachineEvent>(
      pathModel,
      { events: () => RUN_EVENTS, serializeState: (s) => JSON.stringify(s.value), input },
      { simple: false },
    ).filter((p) => p.kind === "shortest");
    generated += shortest.length;
    const paths = shortest.map(({ events }): GeneratedRunPath => {
      const piOrder = inPiOrder(input, events);
      const answered = events.some((e) => e.type === "xstate.done.actor.resolution");
      const reason = unreachedReason(input, piOrder, planRun(input, "x", answered));
      const reordered = show(piOrder) !== show(events);
      return { input, events, piOrder, reordered, unproducible: reason };
    });
    unproducible.push(...paths.filter((p) => p.unproducible));
    distinct.push(...dedupeByPrefix(paths.filter((p) => !p.unproducible)));
  }
  return { generated, distinct, unproducible };
}

export const USER_ADDITION = "also do this";
/**
 * Edge tours of the run's framing inside the run: each producible path that leaves the run open,
 * followed by a user message (a steer, or a follow-up after the answer) or another extension's custom
 * message. (Self-loops of the framing region: no shortest path takes them.)
 */
export function additionTours(distinct: readonly GeneratedRunPath[]): GeneratedRunPath[] {
  return distinct
    .filter((p) => p.piOrder.at(-1)?.type !== "SETTLED")
    .flatMap((p) =>
      [{ type: "USER_MESSAGE", text: USER_ADDITION } as const, OTHER_MESSAGE].map((e) => ({
        ...p,
        tour: true,
        events: [...p.events, e],
        piOrder: [...p.piOrder, e],
      })),
    );
}
