// Model-based, end to end, for M4 (the patch_state barrier): the barrier machine's generated
// shortest paths and edge tours are replayed through a real Pi session. Each BATCH is a faux
// assistant message holding those tool calls (patch_state, read_state and real Pi tools — bash and
// write — in the path's order and positions), each TOOL_CALL is Pi's tool_call hook for one of them,
// and each BATCH_END is Pi's turn_end. After every event the adapter's own barrier actor (observed
// through an inspect observer, never replaced) is compared with a pure actor fed the same events,
// and after every run what the user sees is compared with the pure actor's decisions: which tool
// results say "Blocked" with the machine's reason, and which calls really ran (a file the bash or
// write call creates, the state key a patch_state call writes). Why: the machine suite proves the
// barrier's decisions; only a real Pi session proves that Pi delivers its batches as the machine's
// events and that a blocked call is never executed.

import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { afterAll, describe, expect, it, vi } from "vitest";
import { createActor, type AnyMachineSnapshot, type AnyStateMachine } from "xstate";
import { fauxAssistantMessage, fauxText, fauxToolCall, type AssistantMessage } from "@earendil-works/pi-ai";
import { barrierMachine, type BarrierEvent, type ToolCallRef } from "../../../machines/barrier.ts";
import { generatePaths } from "../../../machines/graph.ts";
import { BARRIER_BATCHES, STRAY_CALL, barrierEvents, barrierStateKey } from "../../support/replay-alphabets.ts";
import { ActorRecorder, type RecordedActor } from "../../support/recorded-actors.ts";
import { PiHarness } from "../../support/pi-harness.ts";

const recorder = vi.hoisted(() => ({ current: null as ActorRecorder | null }));
vi.mock(import("../../../adapters/inspect/inspector.ts"), async (importOriginal) => {
  const original = await importOriginal();
  // The opt-in live inspector's seam: the extension gets an inspection whose observer records.
  return { ...original, loadInspection: async () => recorder.current?.inspection };
});
const actors = new ActorRecorder(["barrier"]);
recorder.current = actors;

// ---- paths -----------------------------------------------------------------------------------

/** Why Pi cannot produce a path, or null. */
function skipReason(path: readonly BarrierEvent[]): string | null {
  let open: readonly ToolCallRef[] | null = null;
  let last = -1;
  for (const e of path) {
    if (e.type === "BATCH") {
      if (e.calls.length === 0)
        return (
          "BATCH{calls: []} cannot be produced: an assistant message without tool calls fires no tool_call " +
          "hook, so the adapter never sends a BATCH of no calls (its turn_end is a BATCH_END in idle)"
        );
      open = e.calls;
      last = -1;
    } else if (e.type === "TOOL_CALL") {
      const index = open?.findIndex((c) => c.id === e.id) ?? -1;
      if (index < 0)
        return (
          `TOOL_CALL{${e.id}} outside the batch cannot be produced: Pi only runs the calls of its newest ` +
          "assistant message, and for a call the barrier does not hold the adapter sends that batch first"
        );
      if (index <= last)
        return "a repeated or reordered TOOL_CALL cannot be produced: Pi calls each call once, in order";
      last = index;
    } else open = null;
  }
  return null;
}

function dedupeByPrefix(paths: BarrierEvent[][]): BarrierEvent[][] {
  const keys = paths.map((p) => p.map((e) => JSON.stringify(e)));
  return paths.filter(
    (_, i) =>
      !keys.some((other, j) => j !== i && other.length > keys[i]!.length && keys[i]!.every((k, n) => k === other[n])),
  );
}

function barrierPaths() {
  const generated = generatePaths<BarrierEvent>(
    barrierMachine,
    { events: barrierEvents, serializeState: barrierStateKey },
    { simple: false },
  );
  const distinct = dedupeByPrefix(generated.map((p) => p.events));
  return {
    generated: generated.length,
    replayed: distinct.filter((p) => skipReason(p) === null),
    skipped: distinct.flatMap((path) => {
      const reason = skipReason(path);
      return reason ? [{ path, reason }] : [];
    }),
  };
}

const show = (path: readonly BarrierEvent[]) =>
  path
    .map((e) =>
      e.type === "BATCH"
        ? `BATCH[${e.calls.map((c) => c.name).join(",")}]`
        : e.type === "TOOL_CALL"
          ? `TC(${e.id})`
          : e.type,
    )
    .join(" → ") || "(no events)";

// ---- path → faux turns -----------------------------------------------------------------------

interface Call extends ToolCallRef {
  args: Record<string, unknown>;
}
type Turn = { kind: "batch"; calls: Call[] } | { kind: "text"; text: string };

/**
 * The path as faux assistant turns. A BATCH is an assistant message holding its calls (ids made
 * unique in the session); Pi then calls every one of them once, in order, and ends the turn
 * (turn_end): a path's TOOL_CALLs are among them, and a BATCH while another is open is produced
 * after that turn_end (Pi ends every turn before the next assistant message). A BATCH_END in idle
 * is a text turn (the resolution steers, so the run goes on). Every run closes with a final-only
 * patch_state turn and an answer, so it ends accepted; those turns are replayed and checked too.
 */
function translate(
  path: readonly BarrierEvent[],
  tag: string,
  markers: string,
): { turns: Turn[]; events: BarrierEvent[] } {
  const turns: Turn[] = [];
  let open: Call[] | null = null;
  let batches = 0;
  const argsOf = (id: string, name: string): Record<string, unknown> => {
    if (name === "bash") return { command: `echo ran > '${join(markers, id)}'` };
    if (name === "write") return { path: join(markers, id), content: "ran" };
    if (name === "patch_state") return { session: { working: { [id]: true } } };
    return {};
  };
  for (const e of path) {
    if (e.type === "BATCH") {
      if (open) turns.push({ kind: "batch", calls: open });
      const k = ++batches;
      open = e.calls.map((c) => ({
        id: `${tag}-${k}-${c.id}`,
        name: c.name,
        args: argsOf(`${tag}-${k}-${c.id}`, c.name),
      }));
    } else if (e.type === "BATCH_END") {
      turns.push(open ? { kind: "batch", calls: open } : { kind: "text", text: `${tag} text turn ${turns.length}` });
      open = null;
    }
  }
  if (open) turns.push({ kind: "batch", calls: open });
  turns.push({ kind: "batch", calls: [{ id: `${tag}-final`, name: "patch_state", args: { final: true } }] });
  turns.push({ kind: "text", text: `${tag} answer` });
  const events: BarrierEvent[] = turns.flatMap((t): BarrierEvent[] =>
    t.kind === "text"
      ? [{ type: "BATCH_END" }]
      : [
          { type: "BATCH", calls: t.calls.map(({ id, name }) => ({ id, name })) },
          ...t.calls.map((c) => ({ type: "TOOL_CALL", id: c.id }) as const),
          { type: "BATCH_END" },
        ],
  );
  return { turns, events };
}

const stepOf = (turn: Turn) => (): AssistantMessage =>
  turn.kind === "text"
    ? fauxAssistantMessage([fauxText(turn.text)], { stopReason: "stop" })
    : fauxAssistantMessage(
        turn.calls.map((c) => fauxToolCall(c.name, c.args as never, { id: c.id })),
        { stopReason: "toolUse" },
      );

// ---- one run -----------------------------------------------------------------------------------

const sameEvent = (a: BarrierEvent, b: BarrierEvent) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Replays one path as one run of `h` and returns every disagreement between what Pi and the adapter
 * did and what `model` (a pure actor of the barrier machine, or a broken one for a negative control)
 * says, event by event and call by call.
 */
async function replayRun(h: PiHarness, path: readonly BarrierEvent[], tag: string, model: AnyStateMachine) {
  const markers = join(h.root, "markers");
  mkdirSync(markers, { recursive: true });
  const { turns, events } = translate(path, tag, markers);
  const where = `path [${show(path)}] as ${turns.length} turns`;
  const bad: string[] = [];
  // The pure side: its snapshot after each event and the decision it emitted for each call.
  const pure = createActor(model);
  const decisions = new Map<string, { block: boolean; reason?: string }>();
  pure.on("*", (e: { type: string; id?: string; reason?: string }) => {
    if (e.type === "barrier.allow" || e.type === "barrier.block")
      decisions.set(e.id!, { block: e.type === "barrier.block", ...(e.reason ? { reason: e.reason } : {}) });
  });
  pure.start();
  const after: AnyMachineSnapshot[] = [];
  for (const e of events) after.push((pure.send(e), pure.getSnapshot()));
  pure.stop();

  const adapter = actors.latest("barrier") as RecordedActor;
  const seen = adapter.steps.length;
  const resultsBefore = h.session.messages.length;
  h.script(...turns.map(stepOf));
  await h.prompt(`${tag} request`);
  if (h.extensionErrors().length) bad.push(`extension errors ${JSON.stringify(h.extensionErrors())} — ${where}`);
  const steps = adapter.steps.slice(seen);
  // I4.x: the adapter's barrier took exactly the translated events and was where the model is after each.
  if (steps.length !== events.length || steps.some((s, i) => !sameEvent(s.event as BarrierEvent, events[i]!)))
    bad.push(
      `the adapter's barrier took [${steps.map((s) => JSON.stringify(s.event)).join(", ")}], ` +
        `not the translated [${events.map((e) => JSON.stringify(e)).join(", ")}] — ${where}`,
    );
  steps.forEach((s, i) => {
    const expected = after[i];
    if (!expected) return;
    const calls = (s.context as { calls: unknown }).calls;
    if (
      JSON.stringify(s.value) !== JSON.stringify(expected.value) ||
      JSON.stringify(calls) !== JSON.stringify(expected.context.calls)
    )
      bad.push(
        `after ${JSON.stringify(s.event)} the adapter's barrier is ${JSON.stringify([s.value, calls])}, ` +
          `the machine's ${JSON.stringify([expected.value, expected.context.calls])} — ${where}`,
      );
  });
  // What the user sees: each call's result says what the machine decided, and only allowed calls ran.
  const results = new Map(
    h.session.messages
      .slice(resultsBefore)
      .filter((m) => m.role === "toolResult")
      .map((m) => {
        const r = m as unknown as { toolCallId: string; isError: boolean; content: { text?: string }[] };
        return [r.toolCallId, { isError: r.isError, text: r.content.map((c) => c.text ?? "").join("") }] as const;
      }),
  );
  const working = h.accessor.read(0, "session").state.working as Record<string, unknown>;
  for (const call of turns.flatMap((t) => (t.kind === "batch" ? t.calls : []))) {
    const decided = decisions.get(call.id);
    const result = results.get(call.id);
    const what = `${call.name} ${call.id}`;
    if (!decided) {
      bad.push(`the machine decided nothing for ${what} — ${where}`);
      continue;
    }
    if (!result) {
      bad.push(`Pi shows no tool result for ${what} — ${where}`);
      continue;
    }
    if (decided.block && (!result.isError || result.text !== decided.reason))
      bad.push(`I4.2 ${what} is blocked by the machine, yet its result is ${JSON.stringify(result)} — ${where}`);
    if (!decided.block && result.text.startsWith("Blocked"))
      bad.push(`I4.1/I4.3 ${what} is allowed by the machine, yet Pi blocked it: ${result.text} — ${where}`);
    const ran =
      call.name === "bash" || call.name === "write"
        ? existsSync(join(markers, call.id))
        : call.name === "patch_state" && "session" in call.args
          ? working[call.id] === true
          : !result.isError;
    if (ran === decided.block)
      bad.push(
        `${what} ${ran ? "ran" : "did not run"} though the machine ` +
          `${decided.block ? "blocked" : "allowed"} it — ${where}`,
      );
  }
  return { bad, events: events.length };
}

// ---- summary -----------------------------------------------------------------------------------

const summary = { generated: 0, distinct: 0, replayed: 0, events: 0, ms: 0, skipped: [] as string[] };
afterAll(() => {
  console.log(
    `[model-based/pi] barrier: paths generated=${summary.generated} distinct-after-prefix-dedupe=${summary.distinct} ` +
      `replayed through Pi=${summary.replayed} (events=${summary.events}) skipped=${summary.skipped.length} ` +
      `time=${Math.round(summary.ms)}ms`,
  );
  for (const s of summary.skipped) console.log(`  skipped ${s}`);
});

describe("M4 barrier: generated shortest paths and edge tours replayed as Pi assistant batches", () => {
  const { generated, replayed, skipped } = barrierPaths();
  summary.generated = generated;
  summary.distinct = replayed.length + skipped.length;
  for (const { path, reason } of skipped) {
    summary.skipped.push(`${show(path)}: ${reason}`);
    it.skip(`${show(path)} — skipped: ${reason}`, () => {});
  }

  it("generates paths through every batch shape, each call position, a stray call and every batch end", () => {
    expect(replayed.length).toBeGreaterThanOrEqual(40);
    expect(skipped.some(({ path }) => path.some((e) => e.type === "TOOL_CALL" && e.id === STRAY_CALL))).toBe(true);
    for (const calls of BARRIER_BATCHES.filter((b) => b.length > 0))
      expect(replayed.some((p) => p.some((e) => e.type === "BATCH" && e.calls === calls))).toBe(true);
  });

  it(`replays the producible paths, one run each, in one Pi session`, async () => {
    const t0 = performance.now();
    const h = await PiHarness.create({ config: { autoStart: true } });
    try {
      expect(h.accessor.episode()).toBe("active.steady");
      expect(actors.latest("barrier"), "the runtime's barrier actor is observed").toBeDefined();
      const bad: string[] = [];
      let index = 0;
      for (const path of replayed) {
        const run = await replayRun(h, path, `P${++index}`, barrierMachine);
        bad.push(...run.bad);
        summary.events += run.events;
        summary.replayed++;
      }
      expect(bad, bad.join("\n")).toEqual([]);
    } finally {
      await h.dispose();
      summary.ms += performance.now() - t0;
    }
  });
});

describe("M4 barrier replay: negative controls (the comparison can fail)", () => {
  const path: BarrierEvent[] = [{ type: "BATCH", calls: BARRIER_BATCHES.find((b) => b.length === 3)! }];
  it("a barrier that lets siblings run beside patch_state disagrees with Pi", async () => {
    const h = await PiHarness.create({ config: { autoStart: true } });
    try {
      const leaky = barrierMachine.provide({ guards: { batchHasPatchState: () => false } });
      const { bad } = await replayRun(h, path, "N1", leaky);
      expect(bad.some((b) => b.includes("the adapter's barrier is"))).toBe(true);
      expect(bad.some((b) => b.includes("Pi blocked it"))).toBe(true);
      // and the real machine agrees with the same session on the next run
      expect((await replayRun(h, path, "N2", barrierMachine)).bad).toEqual([]);
    } finally {
      await h.dispose();
    }
  });
});
