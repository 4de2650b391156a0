import { afterEach, describe, expect, it } from "vitest";
import { PiHarness, call, calls, contextText, say } from "../../support/pi-harness.ts";

let h: PiHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe("State Flow in a real Pi session", () => {
  it("manual default: ordinary Pi until /state-flow-start; then patch, final and an accepted answer", async () => {
    h = await PiHarness.create();
    expect(h.accessor.episode()).toBe("off");
    expect(h.activeTools).not.toContain("patch_state");
    await h.command("/state-flow-start");
    expect(h.extensionErrors()).toEqual([]);
    expect(h.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    expect(h.activeTools).toEqual(expect.arrayContaining(["patch_state", "read_state"]));
    h.script(call("patch_state", { session: { working: { goal: "demo" } }, final: true }), say("Done: goal recorded."));
    await h.prompt("Record the goal");
    expect(h.extensionErrors()).toEqual([]);
    expect(h.accessor.read(0, "session").state).toMatchObject({
      working: { goal: "demo" },
      response: "Done: goal recorded.",
    });
    expect(h.accessor.read(1, "session").state.working).toEqual({ goal: "demo" });
    expect(h.accessor.episode()).toBe("active.steady");
    const second = contextText(h.contexts[1]!);
    expect(second).toContain('"goal": "demo"');
    // The specification is user-authority text in the runtime context, never in the system prompt.
    for (const context of h.contexts) {
      expect(context.systemPrompt).toContain("## State Flow protocol");
      expect(context.systemPrompt).not.toContain("Record the goal");
      expect(contextText({ messages: [context.messages[0]!] } as never)).toMatch(
        /Current specification[^\n]*\nRecord the goal/,
      );
    }
  });
});

describe("temporal properties through Pi", () => {
  it("a barrier shifts current to offset 1 and blocks its siblings with a reason", async () => {
    h = await PiHarness.create();
    await h.command("/state-flow-start");
    h.script(
      calls(
        ["patch_state", { session: { working: { step: 1 } } }],
        ["read_state", { offset: 0 }],
        ["patch_state", { session: { working: { step: 99 } } }],
      ),
      call("patch_state", { final: true }),
      say("ok"),
    );
    await h.prompt("go");
    const results = h.session.messages.filter((m) => m.role === "toolResult") as {
      toolName: string;
      isError: boolean;
      content: { text: string }[];
    }[];
    expect(results.map((r) => [r.toolName, r.isError])).toEqual([
      ["patch_state", false],
      ["read_state", true],
      ["patch_state", true],
      ["patch_state", false],
    ]);
    expect(results[1]!.content[0]!.text).toMatch(
      /Blocked: read_state cannot run in the same assistant batch as patch_state/,
    );
    expect(results[2]!.content[0]!.text).toMatch(/Blocked: a second patch_state call/);
    expect(h.accessor.read(0, "session").state.working).toEqual({ step: 1 });
    // offset 1 is the response-free state right after the barrier; offset 2 is before it.
    expect(h.accessor.read(1, "session").state.working).toEqual({ step: 1 });
    expect(h.accessor.read(2, "session").state.working).toEqual({});
  });

  it("the next inference sees the new state after session, cwd and global barriers", async () => {
    h = await PiHarness.create();
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { session: { working: { s: "session-value" } } }),
      call("patch_state", { cwd: { contract: { c: "cwd-value" } } }),
      call("patch_state", { global: { contract: { g: "global-value" } }, final: true }),
      say("done"),
    );
    await h.prompt("patch three scopes");
    const [first, second, third, fourth] = h.contexts.map(contextText);
    expect(first).not.toContain("session-value");
    expect(second).toMatch(/"s": "session-value"[\s\S]*state at step 1[\s\S]*This run's transitions/);
    expect(third).toContain('"c": "cwd-value"');
    expect(fourth).toContain('"g": "global-value"');
    // The tool call arguments stay as current-run causality, the state is one rebuilt projection.
    expect(fourth!.match(/## state\[0\] —/g)).toHaveLength(1);
    for (const value of ['"s": "session-value"', '"c": "cwd-value"', '"g": "global-value"'])
      expect(fourth!.split(value), `${value} shown once`).toHaveLength(2);
    expect(h.accessor.read(0, "global").state.contract).toEqual({ g: "global-value" });
    expect(h.accessor.read(1, "global").state.contract).toEqual({ g: "global-value" });
    expect(h.accessor.read(2, "global").state.contract).toEqual({});
    expect(h.accessor.read(2, "cwd").state.contract).toEqual({ c: "cwd-value" });
  });

  it("offset 8 is rejected with no transition; pre-origin offsets are errors", async () => {
    h = await PiHarness.create();
    await h.command("/state-flow-start");
    h.script(
      call("read_state", { offset: 8 }),
      call("read_state", { offset: 3 }),
      call("patch_state", { final: true }),
      say("fine"),
    );
    await h.prompt("read history");
    const results = h.session.messages.filter((m) => m.role === "toolResult") as {
      isError: boolean;
      content: { text: string }[];
    }[];
    expect(results[0]!.isError).toBe(true);
    expect(results[1]!.isError).toBe(true);
    expect(results[1]!.content[0]!.text).toMatch(/before this lineage's proven origin/);
    // Only the response transition was created.
    expect(() => h!.accessor.read(2)).toThrow(/only offsets 0–1 exist/);
  });

  it("only compact transitions (at most seven) ever reach context", async () => {
    h = await PiHarness.create();
    await h.command("/state-flow-start");
    const steps = Array.from({ length: 10 }, (_, i) => call("patch_state", { session: { working: { [`k${i}`]: i } } }));
    h.script(...steps, call("patch_state", { final: true }), say("ten done"), say("next"));
    await h.prompt("ten patches");
    h.script(call("patch_state", { final: true }), say("again"));
    await h.prompt("what now");
    const last = contextText(h.contexts[h.contexts.length - 1]!);
    const transitionLines = last.split("\n").filter((l) => l.startsWith("- step "));
    expect(transitionLines.length).toBe(7);
    expect(last).not.toContain("ten patches");
  });

  it("final-only eligibility creates no history; the accepted answer is one response transition", async () => {
    h = await PiHarness.create();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { final: true }), say("Only an answer."));
    await h.prompt("just answer");
    expect(h.accessor.read(0).state.response).toBe("Only an answer.");
    expect(h.accessor.read(1).state.response).toBe("");
    expect(() => h!.accessor.read(2)).toThrow(/only offsets 0–1 exist/);
  });
});
