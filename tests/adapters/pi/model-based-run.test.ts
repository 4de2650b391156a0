// Model-based, end to end, for M5 (the run): the run machine's generated shortest paths, for every
// way a run begins (a prompt, a message Pi announces, agent_start alone) equipped or not, are
// replayed as runs of a real Pi session. Each event is produced by the Pi action that produces it in
// the field: the prompt by h.prompt (before_agent_start announces the run, the prompt is its first
// user message), a run a message starts by another extension's sendMessage(…, {triggerTurn: true})
// (Pi 1.x announces it; Pi 0.84 starts it with agent_start alone), equipped by State Flow active with
// its tools, ordinary by State Flow off or its tools withheld by Pi's tool allowlist, an answer's
// result by faux model turns (a discarded draft, patch_state final:true, the answer the store
// commits), discovery's end by the runtime's own Knowledge discovery, SETTLED by the run's end.
// After every event the adapter's own run actor (observed through an inspect observer, never
// replaced) must have taken the events those actions produce and reached what a pure run actor fed
// the same events reached; and every inference must show what the pure actor says: the current
// specification (request, additions, the message that started the run), whether an answer is being
// resolved, no discarded draft; an ordinary run no State Flow context at all. Why: the machine
// suite (tests/machines/run.test.ts) proves the run's decisions; only a real Pi session proves that
// Pi delivers a run as the machine's events, on both Pi versions.

import { performance } from "node:perf_hooks";
import { afterAll, describe, expect, it, vi } from "vitest";
import { createActor, type AnyStateMachine } from "xstate";
import type { Context } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { runDiscarded, runMachine, runResolution, type RunInput, type RunSnapshot } from "../../../machines/run.ts";
import { NO_SPECIFICATION, renderSpecification, type Specification } from "../../../machines/specification.ts";
import { ActorRecorder, type RecordedActor } from "../../support/recorded-actors.ts";
import { PiHarness, call, contextText, say, type HarnessOptions } from "../../support/pi-harness.ts";
import { PI_VERSION } from "../../support/pi-version.ts";
import {
  KNOWLEDGE,
  FRESHNESS,
  PREPARATION,
  SOURCE,
  USER_ADDITION,
  additionTours,
  eventKey,
  label,
  planRun,
  pureModel,
  runPaths,
  show,
  type Addition,
  type GeneratedRunPath,
  type Turn,
} from "../../support/run-replay.ts";

const recorder = vi.hoisted(() => ({ current: null as ActorRecorder | null }));
vi.mock(import("../../../adapters/inspect/inspector.ts"), async (importOriginal) => {
  const original = await importOriginal();
  // The opt-in live inspector's seam: the extension gets an inspection whose observer records.
  return { ...original, loadInspection: async () => recorder.current?.inspection };
});
const actors = new ActorRecorder(["run"]);
recorder.current = actors;

const PI_1 = PI_VERSION.startsWith("1.");

/** Another extension: `/schedule` sends the custom message `scheduled.text` with triggerTurn (a reminder). */
const scheduled = { text: "" };
function scheduler(w: { api?: ExtensionAPI }, pi: ExtensionAPI): void {
  w.api = pi;
  pi.registerCommand("schedule", {
    description: "test: start a run with another extension's custom message",
    handler: async () => {
      pi.sendMessage({ customType: SOURCE, content: scheduled.text, display: true }, { triggerTurn: true });
    },
  });
}

// ---- sessions ----------------------------------------------------------------------------------

type SessionKind = "equipped" | "off" | "withheld";
const SESSION_OPTIONS: Record<SessionKind, HarnessOptions> = {
  equipped: { config: { autoStart: true } },
  off: { config: { autoStart: false } },
  // Pi's tool allowlist leaves State Flow's tools out: State Flow is active, its runs are ordinary.
  withheld: { config: { autoStart: false }, tools: ["read"] },
};

/** One Pi session per kind, shared by its runs; the specification each run leaves is the next one's input. */
interface World {
  h: PiHarness;
  /** The scheduler extension's API in this session. */
  api?: ExtensionAPI;
  spec: Specification;
  runs: number;
}
const worlds = new Map<SessionKind, World>();
async function open(options: HarnessOptions): Promise<World> {
  const w = { spec: NO_SPECIFICATION, runs: 0 } as World;
  w.h = await PiHarness.create({ ...options, extraExtensions: [(pi) => scheduler(w, pi)] });
  return w;
}
async function world(kind: SessionKind): Promise<World> {
  let w = worlds.get(kind);
  if (w) return w;
  w = await open(SESSION_OPTIONS[kind]);
  if (kind === "withheld") await w.h.command("/state-flow-start");
  const episode = { equipped: "active.steady", off: "off", withheld: "active.bootstrap.fromTranscript" }[kind];
  expect(w.h.accessor.episode(), `the ${kind} session`).toBe(episode);
  worlds.set(kind, w);
  return w;
}

// ---- one run -------------------------------------------------------------------------------------

/** What an inference must show, from the pure actor's snapshot at that point. */
interface View {
  steps: number;
  equipped: boolean;
  spec: Specification;
  resolving: boolean;
  discarded: number[];
}
const viewOf = (s: RunSnapshot, steps: number): View => ({
  steps,
  equipped: s.context.equipped,
  spec: s.context.specification,
  resolving: s.status === "active" && runResolution(s) !== undefined,
  discarded: [...runDiscarded(s)],
});

const SPEC_HEADER = "## Current specification (the user's request for this run)\n";
/** The specification section of an inference's runtime context (up to its next section, or its message's end). */
function specSection(context: Context): string | null {
  for (const message of context.messages) {
    const text = contextText({ messages: [message] } as Context);
    const start = text.indexOf(SPEC_HEADER);
    if (start < 0) continue;
    const body = text.slice(start + SPEC_HEADER.length);
    const end = body.search(/\n+(?=## |\(state\[0\] is )/);
    return end < 0 ? body.trimEnd() : body.slice(0, end);
  }
  return null;
}

const withoutPreparation = (keys: readonly string[]) => keys.filter((k) => !PREPARATION.has(k));

/** The turn's faux message, after it queued what Pi delivers inside the run while it streams. */
function stepOf(w: World, turn: Turn, tag: string) {
  const deliver = () => {
    const d = turn.deliver;
    if (!d) return;
    const text = d.addition.text;
    if (d.addition.kind === "user") void w.h.session.prompt(text, { streamingBehavior: d.as });
    else w.api!.sendMessage({ customType: SOURCE, content: text, display: true }, { deliverAs: d.as });
  };
  const message = messageOf(turn, tag);
  return (context: Context) => (void context, deliver(), message());
}

function messageOf(turn: Turn, tag: string) {
  switch (turn.kind) {
    case "carrier":
      return call("read", { path: `${tag}-absent.txt` });
    case "discarded":
      return say(`${tag} discarded draft`);
    case "final":
      return call("patch_state", { final: true });
    case "answer":
      return say(`${tag} accepted answer`);
    case "interrupted":
      return say(`${tag} interrupted draft`, "error");
    case "plain":
      return say(`${tag} plain answer`);
  }
}

/**
 * Replays one path as one run of `w`'s session and returns every disagreement between what Pi and
 * the adapter did and what `model` (a pure run actor of the machine, or a broken one) says.
 */
async function replayRun(w: World, path: GeneratedRunPath, model: AnyStateMachine): Promise<string[]> {
  const { h } = w;
  const tag = `R${++w.runs}`;
  const text = `${tag} the new request`;
  const kind = path.input.opening.kind;
  const opening: RunInput["opening"] =
    kind === "prompt" ? { kind, text } : kind === "message" ? { kind, source: SOURCE } : { kind };
  const input: RunInput = { opening, equipped: path.input.equipped, specification: w.spec };
  const answered = path.piOrder.some((e) => e.type === "xstate.done.actor.resolution");
  const last = path.piOrder.at(-1);
  const addition: Addition | undefined = !path.tour
    ? undefined
    : last?.type === "USER_MESSAGE"
      ? { kind: "user", text: `${tag} ${USER_ADDITION}` }
      : { kind: "custom", text: `${tag} custom message inside the run` };
  const plan = planRun(input, text, answered, addition);
  const where = `path [${show(path.events)}] (${label(path.input)}) as ${tag}: [${plan.expected.join(" → ")}]`;
  const bad: string[] = [];
  const since = actors.actors.length;
  const contextsBefore = h.contexts.length;
  /** The adapter run actor's step count at each inference. */
  const marks: number[] = [];
  h.script(
    ...plan.turns.map((turn) => {
      const step = stepOf(w, turn, tag);
      return (context: Parameters<typeof step>[0]) => {
        marks.push(actors.latest("run", since)?.steps.length ?? -1);
        return step(context);
      };
    }),
  );
  if (kind === "prompt") await h.prompt(text);
  else {
    scheduled.text = `${tag} scheduled message`;
    await h.command("/schedule");
    await h.session.waitForIdle();
  }
  if (h.extensionErrors().length) bad.push(`extension errors ${JSON.stringify(h.extensionErrors())} — ${where}`);
  if (h.faux.getPendingResponseCount() !== 0) {
    bad.push(`Pi left ${h.faux.getPendingResponseCount()} scripted turns unused — ${where}`);
    h.faux.setResponses([]);
  }
  const runs = actors.actors.slice(since).filter((a) => a.machine === "run");
  if (runs.length !== 1) return [...bad, `Pi's run spawned ${runs.length} run actors — ${where}`];
  const adapter = runs[0] as RecordedActor;
  if (JSON.stringify(adapter.input) !== JSON.stringify(input))
    bad.push(`the run actor began with ${JSON.stringify(adapter.input)}, not ${JSON.stringify(input)} — ${where}`);

  // The events: exactly those the Pi actions produce (discovery's end where Pi put it, before the first context).
  const keys = adapter.steps.map((s) => eventKey(s.event));
  if (JSON.stringify(withoutPreparation(keys)) !== JSON.stringify(withoutPreparation(plan.expected)))
    bad.push(`the adapter's run actor took [${keys.join(" → ")}] — ${where}`);
  const knowledgeAt = keys.indexOf(KNOWLEDGE);
  const knowledgeCount = keys.filter((k) => k === KNOWLEDGE).length;
  if (knowledgeCount !== (input.equipped ? 1 : 0))
    bad.push(`discovery ended ${knowledgeCount}× in an ${input.equipped ? "equipped" : "ordinary"} run — ${where}`);
  if (knowledgeAt >= 0 && marks[0] !== undefined && knowledgeAt >= marks[0])
    bad.push(`discovery ended after the run's first context (step ${knowledgeAt}) — ${where}`);
  const freshnessAt = keys.indexOf(FRESHNESS);
  if (keys.filter((k) => k === FRESHNESS).length !== (input.equipped ? 1 : 0) || freshnessAt > knowledgeAt)
    bad.push(`the shared-state check ended at step ${freshnessAt}, discovery at ${knowledgeAt} — ${where}`);
  // (a prompt run's first user message is its prompt; a tour's last one, the message delivered inside the run)
  const pathKeys = path.piOrder.map((e, i) =>
    e.type !== "USER_MESSAGE"
      ? eventKey(e)
      : `USER(${path.tour && i === path.piOrder.length - 1 ? addition!.text : text})`,
  );
  // (the preparation's ends float: Pi may finish the check before it reports the prompt; checked above)
  let at = 0;
  for (const key of withoutPreparation(pathKeys)) at = at < 0 ? at : keys.indexOf(key, at) + 1 || -1;
  if (at < 0) bad.push(`the run did not produce the path's events in order (took [${keys.join(" → ")}]) — ${where}`);

  // The pure actor fed the same events (an answer's result comes from its own resolution, as in the adapter).
  const pure = new ActorRecorder(["run"]);
  const actor = createActor(model, { input, inspect: pure.inspect } as never);
  actor.start();
  const trail = () => pure.actors[0]!.steps;
  const views: View[] = [viewOf(actor.getSnapshot() as RunSnapshot, 0)];
  for (const step of adapter.steps) {
    if (step.event.type === "xstate.done.actor.resolution" || actor.getSnapshot().status !== "active") continue;
    actor.send(step.event);
    views.push(viewOf(actor.getSnapshot() as RunSnapshot, trail().length));
  }
  const output = (actor.getSnapshot() as RunSnapshot).output;
  actor.stop();
  trail().forEach((expected, i) => {
    const s = adapter.steps[i];
    const seen = s && [eventKey(s.event), s.value, s.context, s.status];
    const said = [eventKey(expected.event), expected.value, expected.context, expected.status];
    if (JSON.stringify(seen) !== JSON.stringify(said))
      bad.push(
        `step ${i}: the adapter's run is ${JSON.stringify(seen)}, the machine's ${JSON.stringify(said)} — ${where}`,
      );
  });
  if (trail().length !== adapter.steps.length)
    bad.push(`the machine took ${trail().length} steps, the adapter's run ${adapter.steps.length} — ${where}`);

  // What each inference showed.
  const drafts = new Map(
    adapter.steps.flatMap((s) => (s.event.type === "DRAFT" ? [[s.event.id as number, s.event.text as string]] : [])),
  );
  const contexts = h.contexts.slice(contextsBefore);
  if (contexts.length !== plan.turns.length)
    bad.push(`${contexts.length} inferences, the plan has ${plan.turns.length} turns — ${where}`);
  contexts.forEach((context, j) => {
    const view = [...views].reverse().find((v) => v.steps <= (marks[j] ?? 0))!;
    const all = contextText(context);
    const at = `inference ${j + 1} (after ${keys.slice(0, marks[j]).join(" → ")}) — ${where}`;
    if (!view.equipped) {
      if (all.includes("[State Flow runtime context")) bad.push(`an ordinary run shows State Flow's context: ${at}`);
      if ((context.systemPrompt ?? "").includes("## State Flow protocol"))
        bad.push(`an ordinary run has State Flow's protocol: ${at}`);
      return;
    }
    const shown = specSection(context);
    const spec = renderSpecification(view.spec).join("\n");
    if (shown !== spec)
      bad.push(`the specification shown is ${JSON.stringify(shown)}, the machine's ${JSON.stringify(spec)}: ${at}`);
    if (all.includes("\n## Resolution\n") !== view.resolving)
      bad.push(`the Resolution note is ${view.resolving ? "missing" : "shown"}: ${at}`);
    for (const id of view.discarded)
      if (drafts.has(id) && all.includes(drafts.get(id)!))
        bad.push(`discarded draft ${drafts.get(id)} is shown: ${at}`);
  });
  // The episode keeps the specification the adapter's run ended with: the next run's input.
  const end = adapter.steps.at(-1);
  if (end?.status === "done") w.spec = (end.output as { specification: Specification }).specification;
  if (
    end?.status !== "done" ||
    JSON.stringify(output) !== JSON.stringify({ accepted: ended(end), specification: w.spec })
  )
    bad.push(
      `the run ended ${end?.status} with ${JSON.stringify(end?.context)}, ` +
        `the machine with ${JSON.stringify(output)} — ${where}`,
    );
  return bad;
}

// ---- paths and summary -----------------------------------------------------------------------------

/** Why this Pi cannot begin a run the path's way, or null. */
function openingSkip(input: RunInput): string | null {
  if (input.opening.kind === "message" && !PI_1)
    return `Pi ${PI_VERSION} does not announce a run a custom message's triggerTurn starts (no before_agent_start)`;
  if (input.opening.kind === "unannounced" && PI_1)
    return `Pi ${PI_VERSION} announces every run it starts (before_agent_start, a custom message's too)`;
  return null;
}

const summary = { generated: 0, distinct: 0, tours: 0, replayed: 0, reordered: 0, ms: 0, skipped: [] as string[] };
afterAll(async () => {
  for (const w of worlds.values()) await w.h.dispose();
  console.log(
    `[model-based/pi ${PI_VERSION}] run: shortest paths generated=${summary.generated} ` +
      `distinct-after-prefix-dedupe=${summary.distinct} + edge tours of in-run messages=${summary.tours}; ` +
      `replayed through Pi=${summary.replayed} ` +
      `(in Pi's order: ${summary.reordered}) skipped=${summary.skipped.length} time=${Math.round(summary.ms)}ms`,
  );
  for (const s of summary.skipped) console.log(`  skipped ${s}`);
});

const ended = (step: { context: unknown }) => (step.context as { accepted: boolean }).accepted;

describe(`M5 run: generated shortest paths replayed as runs of a real Pi session (Pi ${PI_VERSION})`, () => {
  const { generated, distinct, unproducible } = runPaths();
  summary.generated = generated;
  summary.distinct = distinct.length;
  for (const path of unproducible) {
    const title = `${label(path.input)}: ${show(path.events)}`;
    summary.skipped.push(`${title}: ${path.unproducible}`);
    it.skip(`${title} — skipped: ${path.unproducible}`, () => {});
  }
  it("generates the shortest paths of every opening, equipped or not", () => {
    expect(generated).toBeGreaterThanOrEqual(20);
    expect(distinct.length).toBeGreaterThanOrEqual(10);
  });
  const tours = additionTours(distinct);
  summary.tours = tours.length;
  for (const path of [...distinct, ...tours]) {
    // An ordinary path runs twice: with State Flow off, and with its tools withheld.
    for (const kind of path.input.equipped ? ["equipped" as const] : (["off", "withheld"] as const)) {
      const title = `${label(path.input)} (${kind}): ${show(path.piOrder)}${path.reordered ? " (in Pi's order)" : ""}`;
      const reason = openingSkip(path.input);
      if (reason) {
        summary.skipped.push(`${title}: ${reason}`);
        it.skip(`${title} — skipped: ${reason}`, () => {});
        continue;
      }
      it(title, async () => {
        const t0 = performance.now();
        const bad = await replayRun(await world(kind), path, pureModel());
        summary.ms += performance.now() - t0;
        summary.replayed++;
        if (path.reordered) summary.reordered++;
        expect(bad, bad.join("\n")).toEqual([]);
      });
    }
  }
});

describe("M5 run replay: negative controls (the comparison can fail)", () => {
  const { distinct } = runPaths();
  const prompt = distinct.find((p) => p.input.equipped && p.input.opening.kind === "prompt" && p.piOrder.length > 2)!;
  it("a machine that takes the prompt for an addition, or an equipped run for an ordinary one, disagrees", async () => {
    const h = await PiHarness.create(SESSION_OPTIONS.equipped);
    try {
      const w: World = { h, spec: NO_SPECIFICATION, runs: 0 };
      const byPrompt = await replayRun(
        w,
        prompt,
        pureModel(runMachine.provide({ guards: { openedByPrompt: () => false } })),
      );
      expect(byPrompt.some((b) => b.includes("the specification shown is"))).toBe(true);
      expect(byPrompt.some((b) => b.includes("the adapter's run is"))).toBe(true);
      const ordinary = await replayRun(w, prompt, pureModel(runMachine.provide({ guards: { equipped: () => false } })));
      expect(ordinary.some((b) => b.includes("the adapter's run is"))).toBe(true);
      // and the real machine agrees with the same session on the next run
      expect(await replayRun(w, prompt, pureModel())).toEqual([]);
    } finally {
      await h.dispose();
    }
  });
});
