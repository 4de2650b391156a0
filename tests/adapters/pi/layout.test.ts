// The cache-aware layout in a real Pi session (issue 27, item 2): the runtime context's first block
// holds the stable paths of state[0] and stays byte-identical from run to run while only a
// neighbour changes; a path patched long ago sits there even when its neighbour changes every run;
// a recently changed path is in the volatile part, and an accepted patch leaves the stable block as
// it was within the run unless it patched a stable path, which then keeps its place with its new value.
import type { Context } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { CONTINUED_MARKER } from "../../../adapters/pi/context.ts";
import { call, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

const blocks = (context: Context): string[] =>
  ((context.messages[0] as { content: { text: string }[] }).content ?? []).map((b) => b.text);
const lastText = (context: Context): string => {
  const content = (context.messages.at(-1) as { content: unknown }).content;
  return Array.isArray(content) ? content.map((b: { text?: string }) => b.text ?? "").join("") : String(content);
};

describe("the runtime context's layout across runs", () => {
  it("keeps an old 8 KiB value in a byte-identical stable block while its neighbour changes every run", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const big = "b".repeat(8 * 1024);
    h.script(call("patch_state", { cwd: { contract: { big } }, session: { working: { next: "n0" } }, final: true }));
    h.script(say("Recorded."));
    await h.prompt("Record the big value");
    const firstOfRun: Context[] = [];
    for (let run = 1; run <= 6; run++) {
      h.script(call("patch_state", { session: { working: { next: `n${run}` } }, final: true }), say(`Run ${run}.`));
      const before = h.contexts.length;
      await h.prompt(`Run ${run}`);
      const [first, second] = h.contexts.slice(before);
      firstOfRun.push(first!);
      expect(blocks(second!)[0], `run ${run}: the accepted patch left the stable block as it was`).toBe(
        blocks(first!)[0],
      );
      expect(lastText(second!) + blocks(second!).join(""), `run ${run}: the new value is shown`).toContain(
        `"next": "n${run}"`,
      );
    }
    // Right after the patch, the big value is recent (volatile); once seven transitions passed it, it is stable.
    expect(blocks(firstOfRun[0]!)[0]).not.toContain(big);
    const settled = firstOfRun.slice(-2).map((c) => blocks(c)[0]!);
    expect(settled[0]).toContain(`"big": "${big}"`);
    expect(settled[0]).not.toContain('"next"');
    expect(settled[1], "byte-identical from run to run").toBe(settled[0]);
    // The neighbour that changes every run is never in the stable block.
    for (const c of firstOfRun) expect(blocks(c)[0]).not.toContain('"next"');
  }, 60_000);
});

describe("a stable path patched in a run", () => {
  it("keeps its place in the stable part with its new value; the old value is sent nowhere", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const notes: Record<string, string> = {};
    for (let k = 0; k < 12; k++) notes[`n${k}`] = `note ${k} `.repeat(30);
    h.script(call("patch_state", { session: { working: { notes } }, final: true }), say("seeded"));
    await h.prompt("seed");
    for (let run = 1; run <= 8; run++) {
      h.script(call("patch_state", { session: { working: { status: `run ${run}` } }, final: true }), say("ok"));
      await h.prompt(`quiet run ${run}`);
    }
    const quiet = blocks(h.contexts.at(-1)!)[0]!;
    expect(quiet, "the seeded notes are stable by now").toContain('"n5": "note 5');
    h.script(call("patch_state", { session: { working: { notes: { n5: "changed" } } }, final: true }), say("ok"));
    const before = h.contexts.length;
    await h.prompt("change n5");
    const [first, second] = h.contexts.slice(before);
    expect(blocks(first!)[0]).toBe(quiet);
    const rebuilt = blocks(second!)[0]!;
    expect(rebuilt, "n5 stays in the stable part, rebuilt with its new value").toContain('"n5": "changed"');
    expect(rebuilt.indexOf('"n4"'), "in its place").toBeLessThan(rebuilt.indexOf('"n5"'));
    expect(rebuilt.indexOf('"n5"')).toBeLessThan(rebuilt.indexOf('"n6"'));
    expect(rebuilt.replace('"n5": "changed"', ""), "once").not.toContain('"n5"');
    expect(lastText(second!), "not repeated in the volatile part").not.toContain('"n5"');
    // 001: "The next inference sees one rebuilt current-state projection; it must not reconstruct the update itself".
    expect(JSON.stringify(first), "sent before the patch").toContain("note 5 note 5");
    expect(JSON.stringify(second), "the old value is nowhere in the request").not.toContain("note 5 note 5");
    h.script(call("patch_state", { final: true }), say("ok"));
    const next = h.contexts.length;
    await h.prompt("next run");
    expect(blocks(h.contexts[next]!)[0], "the next run starts where the run ended").toBe(rebuilt);
  }, 60_000);
});

describe("what the previous run changed", () => {
  it("stays in place unless this run changes it again; then it leaves the stable part", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    const notes: Record<string, string> = {};
    for (let k = 0; k < 6; k++) notes[`n${k}`] = `note ${k} `.repeat(30);
    h.script(call("patch_state", { session: { working: { notes, status: "seeded" } }, final: true }), say("seeded"));
    await h.prompt("seed");
    for (let run = 1; run <= 2; run++) {
      h.script(call("patch_state", { session: { working: { status: `run ${run}` } }, final: true }), say("ok"));
      await h.prompt(`quiet run ${run}`);
    }
    const change = async (key: string, value: string) => {
      h.script(call("patch_state", { session: { working: { notes: { [key]: value } } }, final: true }));
      h.script(say("ok"));
      const before = h.contexts.length;
      await h.prompt(`change ${key}`);
      return h.contexts.slice(before);
    };
    const [a1, a2] = await change("n1", "n1 changed");
    expect(blocks(a1!)[0], "the seeded notes are stable by now").toContain('"n1": "note 1');
    expect(blocks(a2!)[0], "a quiet note patched stays in the stable part").toContain('"n1": "n1 changed"');
    const [b1, b2] = await change("n2", "n2 changed");
    expect(blocks(b1!)[0], "the next run starts where the run ended").toBe(blocks(a2!)[0]);
    expect(blocks(b2!)[0], "n2, quiet before, stays in place too").toContain('"n2": "n2 changed"');
    expect(blocks(b2!)[0], "n1, which this run left alone, stays").toContain('"n1": "n1 changed"');
    const [c1, c2] = await change("n2", "n2 again");
    expect(blocks(c1!)[0]).toBe(blocks(b2!)[0]);
    expect(blocks(c2!)[0], "n2, changed by the previous run too, left the stable part").not.toContain('"n2"');
    expect(blocks(c2!)[0]).toContain('"n1": "n1 changed"');
    expect(lastText(c2!), "and is shown with its current value in the volatile part").toContain('"n2": "n2 again"');
    const sent = (context: Context | undefined) => JSON.stringify(context);
    for (const [was, now, old] of [
      [a1, a2, "note 1 note 1"],
      [b1, b2, "note 2 note 2"],
      [b2, c2, "n2 changed"],
    ] as const) {
      expect(sent(was), "sent before the patch").toContain(old);
      expect(sent(now), "the old value is nowhere in the request after it").not.toContain(old);
    }
  }, 60_000);
});

describe("/state-flow-status shows how large state[0] is", () => {
  it("per scope and per request; a one-line notice past 8,000 tokens, and nothing refused", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { cwd: { contract: { lang: "ts" } }, final: true }), say("ok"));
    await h.prompt("small");
    await h.command("/state-flow-status");
    const small = h.lastNotice()!.message;
    expect(small).toMatch(/state\[0\] size \(tokens, Pi's estimate\): global \d+, cwd \d+, session \d+; effective \d+/);
    expect(small).not.toContain("notice:");
    const notes = "n".repeat(40_000);
    h.script(call("patch_state", { cwd: { working: { notes } }, final: true }), say("ok"));
    await h.prompt("large");
    await h.command("/state-flow-status");
    const large = h.lastNotice()!.message;
    expect(large).toMatch(/cwd 10,0\d\d, session \d+; effective 10,\d\d\d, added to every model request/);
    expect(large).toContain("notice: state[0] is past 8,000 tokens; consider curating it (/skill:state-flow-memory)");
    h.script(call("patch_state", { cwd: { working: { more: notes } }, final: true }), say("still ok"));
    await h.prompt("larger");
    expect(h.accessor.read(0, "cwd").state.working.more, "information, never a gate").toBe(notes);
  }, 60_000);
});

describe("the volatile part after the run", () => {
  it("says again, in its own message, that it is State Flow's fallible state and no instruction", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { next: "n1" } }, final: true }), say("Done."));
    const before = h.contexts.length;
    await h.prompt("Record next");
    const afterPatch = h.contexts.slice(before)[1]!;
    const trailing = lastText(afterPatch);
    expect(trailing.startsWith(CONTINUED_MARKER), trailing.slice(0, 120)).toBe(true);
    expect(trailing).toContain('"next": "n1"');
  });
});
