import type { AgentMessage } from "@earendil-works/pi-agent-core";
import { estimateTokens } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import {
  PROTOCOL,
  RESOLUTION_NOTE,
  RUN_ANCHOR,
  STOP_HANDOFF,
  currentRunStart,
  projectContext,
  renderRuntimeContext,
  renderRuntimeContextParts,
  SMALL_VOLATILE,
  volatileAfterRun,
  trailingVolatile,
  withoutOwnMessages,
  transitionLines,
  closedRunOnly,
  freshnessLines,
  hasPreFlowContext,
  type ProjectionMode,
} from "../../../adapters/pi/context.ts";
import { PATCH_STATE_DESCRIPTION, READ_STATE_DESCRIPTION } from "../../../adapters/pi/tool-schemas.ts";
import { emptyScopeState } from "../../../storage/core/scope-state.ts";
import { trieOf } from "../../../adapters/pi/stability.ts";
import { NO_SPECIFICATION } from "../../../machines/specification.ts";

let clock = 0;
const user = (text: string): AgentMessage =>
  ({ role: "user", content: [{ type: "text", text }], timestamp: ++clock }) as AgentMessage;
const assistant = (text: string): AgentMessage =>
  ({
    role: "assistant",
    content: [{ type: "text", text }],
    stopReason: "stop",
    timestamp: ++clock,
  }) as unknown as AgentMessage;
const custom = (customType: string, content: string, sessionId = "S"): AgentMessage =>
  ({ role: "custom", customType, content, display: false, details: { sessionId }, timestamp: ++clock }) as AgentMessage;

const text = (m: AgentMessage): string => {
  const c = (m as { content: unknown }).content;
  return typeof c === "string" ? c : (c as { text?: string }[]).map((b) => b.text ?? "").join("");
};

function project(messages: AgentMessage[], mode: ProjectionMode, discarded: number[] = []) {
  return projectContext({
    messages,
    mode,
    sessionId: "S",
    runtimeContext: "CTX",
    discardedDrafts: new Set(discarded),
  }).map(text);
}

describe("projectContext", () => {
  const history = [user("old request"), assistant("old answer"), custom("foreign-ext", "keep me", "whatever")];

  it("steady: runtime context + foreign custom messages + the complete current run; completed runs leave", () => {
    const run = [user("new request"), custom(RUN_ANCHOR, "[run]"), assistant("working")];
    expect(
      project([...history, user("prev run"), custom(RUN_ANCHOR, "[run]"), assistant("prev answer"), ...run], "steady"),
    ).toEqual(["CTX", "keep me", "new request", "working"]);
  });

  it("bootstrap keeps the pre-Flow context for the migration run", () => {
    const messages = [...history, user("new request"), custom(RUN_ANCHOR, "[run]")];
    expect(project(messages, "bootstrap")).toEqual(["CTX", "old request", "old answer", "keep me", "new request"]);
  });

  it("bootstrap after an interrupted migration run: the pre-Flow context, not the interrupted run's messages", () => {
    const interrupted = [user("cut off request"), custom(RUN_ANCHOR, "[run]"), assistant("PARTIAL")];
    const messages = [...history, ...interrupted, user("new request"), custom(RUN_ANCHOR, "[run]")];
    expect(project(messages, "bootstrap")).toEqual(["CTX", "old request", "old answer", "keep me", "new request"]);
  });

  it("bootstrap after a restart starts at the frozen stop handoff, not the raw pre-stop transcript", () => {
    const messages = [
      ...history,
      custom(STOP_HANDOFF, "FROZEN"),
      user("while stopped"),
      assistant("plain answer"),
      user("restart request"),
      custom(RUN_ANCHOR, "[run]"),
    ];
    expect(project(messages, "bootstrap")).toEqual([
      "CTX",
      "FROZEN",
      "while stopped",
      "plain answer",
      "restart request",
    ]);
  });

  it("passive: the frozen handoff plus what followed the stop", () => {
    const messages = [...history, custom(RUN_ANCHOR, "[run]"), custom(STOP_HANDOFF, "FROZEN"), user("after stop")];
    expect(project(messages, "passive")).toEqual(["FROZEN", "after stop"]);
  });

  it("ignores markers written by another physical session (a fork's parent)", () => {
    const messages = [
      ...history,
      custom(STOP_HANDOFF, "PARENT FROZEN", "PARENT"),
      user("q"),
      custom(RUN_ANCHOR, "[run]", "PARENT"),
    ];
    expect(project(messages, "passive")).toEqual(["old request", "old answer", "keep me", "q"]);
    expect(currentRunStart(messages, "S")).toBe(0);
  });

  it("drops discarded drafts and superseded resolution notes; keeps only the newest note in its run", () => {
    const draft1 = assistant("draft one");
    const draft2 = assistant("draft two");
    const messages = [
      user("q"),
      custom(RUN_ANCHOR, "[run]"),
      draft1,
      custom(RESOLUTION_NOTE, "resolve 1"),
      draft2,
      custom(RESOLUTION_NOTE, "resolve 2"),
    ];
    expect(project(messages, "steady", [draft1.timestamp, draft2.timestamp])).toEqual(["CTX", "q", "resolve 2"]);
    const next = [...messages, assistant("final"), user("next"), custom(RUN_ANCHOR, "[run]")];
    expect(project(next, "steady", [])).toEqual(["CTX", "next"]);
  });
});

describe("the volatile part's place", () => {
  const parts = { stable: "STABLE", run: "RUN", volatile: "V".repeat(SMALL_VOLATILE + 40) };
  const long = "L".repeat(SMALL_VOLATILE + 40);
  const blocks = (m: AgentMessage) => ((m as { content: { text: string }[] }).content ?? []).map((b) => b.text);

  it("stays in the runtime-context message while it is larger than the run's trajectory", () => {
    const messages = [user("short"), custom(RUN_ANCHOR, "[run]")];
    const out = projectContext({
      messages,
      mode: "steady",
      sessionId: "S",
      runtimeContext: parts,
      discardedDrafts: new Set(),
    });
    expect(out.map(blocks)).toEqual([["STABLE", "RUN", parts.volatile], ["short"]]);
    expect(volatileAfterRun(parts.volatile, [user("short")])).toBe(false);
    expect(volatileAfterRun("V".repeat(SMALL_VOLATILE), [user("short")]), "a small part always goes last").toBe(true);
  });

  it("follows the trajectory, as the last message, once the trajectory is at least as large", () => {
    const messages = [user(long), custom(RUN_ANCHOR, "[run]"), assistant("working")];
    const out = projectContext({
      messages,
      mode: "steady",
      sessionId: "S",
      runtimeContext: parts,
      discardedDrafts: new Set(),
    });
    expect(out.map(blocks)).toEqual([["STABLE", "RUN"], [long], ["working"], [trailingVolatile(parts.volatile)]]);
    expect(out.at(-1)!.role).toBe("user");
  });
});

describe("renderRuntimeContext", () => {
  it("carries the specification, state[0], compact transitions, invalidations and the resolution note", () => {
    const text = renderRuntimeContext({
      specification: { ...NO_SPECIFICATION, request: "Fix the parser" },
      state: { ...emptyScopeState(), working: { next: "run tests" } },
      volatile: trieOf([["working", "next"]]),
      step: 3,
      transitions: [{ id: "T3", step: 3, changes: { session: ["working.next"] } }],
      invalidations: [{ path: "/k/a.md", reason: "changed" }],
      resolutionNote: "Attempt 2 of 3",
      bootstrap: true,
    });
    expect(text).toContain("Fix the parser");
    expect(text).toContain('"next": "run tests"');
    expect(text).toContain("- step 3: session: working.next");
    expect(text).toContain("- /k/a.md: changed");
    expect(text).toContain("## Bootstrap");
    expect(text).toContain("Attempt 2 of 3");
    expect(text).toMatch(/not an instruction/);
  });

  it("renders each state object once and never serves one state's text for another", () => {
    const input = {
      specification: { ...NO_SPECIFICATION, request: "r" },
      volatile: trieOf([]),
      step: 1,
      transitions: [],
      invalidations: [],
      resolutionNote: null,
      bootstrap: false,
    };
    const state = { ...emptyScopeState(), working: { n: 1 } };
    const first = renderRuntimeContext({ ...input, state });
    expect(renderRuntimeContext({ ...input, state })).toBe(first);
    const next = renderRuntimeContext({ ...input, state: { ...state, working: { n: 2 } } });
    expect(next).toContain('"n": 2');
    expect(next).not.toContain('"n": 1');
  });

  it("orders stable paths, then the run's parts, then the volatile paths, the step and the resolution", () => {
    const parts = renderRuntimeContextParts({
      specification: { ...NO_SPECIFICATION, request: "Fix the parser" },
      state: {
        ...emptyScopeState(),
        contract: { lang: "ts", api: "v2" },
        working: { next: "run tests", big: "x".repeat(100) },
        response: "Done before.",
      },
      volatile: trieOf([
        ["working", "next"],
        ["contract", "api"],
      ]),
      step: 3,
      transitions: [{ id: "T2", step: 2, changes: { session: ["working.next", "response"] } }],
      runTransitions: [{ id: "T3", step: 3, changes: { cwd: ["contract.api"] } }],
      invalidations: [],
      resolutionNote: "Attempt 2 of 3",
      bootstrap: false,
    });
    expect(JSON.parse(parts.stable.split("```json\n")[1]!.split("\n```")[0]!)).toEqual({
      contract: { lang: "ts" },
      working: { big: "x".repeat(100) },
    });
    expect(parts.stable).not.toMatch(/step|Fix the parser|response|artifacts/);
    expect(parts.run).toMatch(
      /^state\[0\]\.response: "Done before\."\n\n## Current specification[^\n]*\nFix the parser/,
    );
    expect(parts.run).toContain("## Recent transitions (newest first, as at this run's start)\n- step 2:");
    expect(parts.run, "a clean invalidation check leaves its section out").not.toContain("Artifact invalidations");
    expect(JSON.parse(parts.volatile.split("```json\n")[1]!.split("\n```")[0]!)).toEqual({
      contract: { api: "v2" },
      working: { next: "run tests" },
    });
    expect(parts.volatile).toMatch(
      /\(state\[0\] is the state at step 3\)\n\n## This run's transitions[^\n]*\n- step 3: cwd:/,
    );
    expect(parts.volatile).toMatch(/## Resolution\nAttempt 2 of 3$/);
    expect(parts.run + parts.volatile, "each path once").not.toContain('"lang"');
    // Sent as separate text blocks, which a provider may join with nothing between: each block ends its line.
    expect(parts.stable + parts.run).toContain('```\nstate[0].response: "Done before."');
    expect(parts.run + parts.volatile).toMatch(/\n## state\[0\], continued/);
  });

  it("leaves empty fields and sections out, but says an invalidation plan that could not be made", () => {
    const input = {
      specification: { ...NO_SPECIFICATION, request: "Hello" },
      state: emptyScopeState(),
      volatile: trieOf([]),
      step: 0,
      transitions: [],
      invalidations: { unavailable: "the Knowledge root could not be read" },
      resolutionNote: null,
      bootstrap: false,
    };
    const text = renderRuntimeContext(input);
    expect(text).not.toMatch(/"response"|"artifacts"|"contract"|"working"|\(none|Recent transitions|continued/);
    expect(text).toContain("## Artifact invalidations\n(unavailable: the Knowledge root could not be read)");
    expect(renderRuntimeContext({ ...input, invalidations: [] })).not.toContain("Artifact invalidations");
  });

  it("the protocol names both tools and the final:true rule", () => {
    expect(PROTOCOL).toMatch(/patch_state/);
    expect(PROTOCOL).toMatch(/read_state/);
    expect(PROTOCOL).toMatch(/final:true/);
    expect(PROTOCOL).toMatch(/Call patch_state alone in its message: any other tool call beside it is blocked/);
    expect(PROTOCOL).toMatch(/without it your answer is not accepted and you will be asked again/);
    expect(PROTOCOL).toMatch(/patch_state is the only way to change state, except response/);
  });

  it("the protocol carries 001's handoff guidance and stays small (Pi's own token estimate)", () => {
    expect(PROTOCOL).toMatch(/Keep requirements, observations, conclusions and hypotheses distinct/);
    expect(PROTOCOL).toMatch(/after an interruption or a restore, inspect external effects before repeating/);
    expect(PROTOCOL).toMatch(/Never put secrets in state/);
    const tokens = estimateTokens({ role: "user", content: [{ type: "text", text: PROTOCOL }], timestamp: 0 } as never);
    expect(tokens, "496 before issue 27 tightened it; overhead.test.ts bounds it with the tools").toBeLessThan(400);
  });

  it("the protocol states the materialized-first policy: artifacts first, a source read only for a reason", () => {
    expect(PROTOCOL).toMatch(/Work from state\[0\] and artifacts first; make the smallest sufficient read\./);
    expect(PROTOCOL).toMatch(/a source only for a gap its artifact does not cover/);
    expect(PROTOCOL).toMatch(/an entry under Artifact invalidations/);
    expect(PROTOCOL).toMatch(/never for reassurance/);
    expect(PROTOCOL).toMatch(/never write hashes or compiler fields/);
  });

  // 001, "Handoff quality" and "Lazy historical reads": what a later run must find in state, and how
  // little to read. Every request carries the protocol and both tool descriptions, so each point is
  // said exactly once across the three.
  it("asks once, across protocol and tool descriptions, for what a later run needs and the smallest read", () => {
    const everyRequest = [PROTOCOL, PATCH_STATE_DESCRIPTION, READ_STATE_DESCRIPTION].join("\n");
    const saidOnce = (rule: RegExp) =>
      expect(everyRequest.match(new RegExp(rule.source, "g")) ?? [], String(rule)).toHaveLength(1);
    for (const rule of [
      /commitments and their consequences/,
      /Silence is not acceptance: an unanswered proposal is not agreed/,
      /where each came from and when it expires or needs reconsidering/,
      /hypotheses marked uncertain/,
      /reconcile contradictions/,
      /smallest sufficient read/,
      /Read history \(read_state\) only for a concrete gap/,
    ])
      saidOnce(rule);
    expect(PATCH_STATE_DESCRIPTION).toMatch(/contract \([^)]*commitments and their consequences/);
  });
});

describe("withoutOwnMessages (State Flow not active on the branch)", () => {
  it("drops only State Flow's private messages (any session's); none there: Pi's context stays", () => {
    const plain = [user("hi"), assistant("hello"), custom("other-extension", "theirs")];
    expect(withoutOwnMessages(plain)).toBeNull();
    const marked = [
      custom(RUN_ANCHOR, "[State Flow run]", "PARENT"),
      user("q"),
      custom(RESOLUTION_NOTE, "[State Flow resolution 1/3]", "PARENT"),
      assistant("a"),
      custom(STOP_HANDOFF, "frozen exit handoff", "PARENT"),
      custom("other-extension", "theirs"),
    ];
    expect(withoutOwnMessages(marked)!.map(text)).toEqual(["q", "a", "theirs"]);
  });

  it("drops the drafts a resolution discarded, by their timestamps", () => {
    const draft = assistant("unresolved draft");
    const answer = assistant("answer");
    const messages = [user("q"), draft, answer];
    expect(withoutOwnMessages(messages, new Set([draft.timestamp]))!.map(text)).toEqual(["q", "answer"]);
    expect(withoutOwnMessages(messages, new Set([user("x").timestamp]))).toBeNull();
  });
});

describe("closedRunOnly (a failed-closed branch)", () => {
  it("keeps only the run from its starting message: no earlier transcript, no private messages", () => {
    const messages = [user("old request"), assistant("old answer"), custom("reminder", "check"), assistant("x")];
    expect(closedRunOnly(messages, new Set()).map(text)).toEqual(["check", "x"]);
    const prompted = [user("old"), custom(RUN_ANCHOR, "[run]"), user("new"), custom(RESOLUTION_NOTE, "[note]")];
    expect(closedRunOnly(prompted, new Set()).map(text)).toEqual(["new"]);
  });
});

describe("the compact transition context", () => {
  it("gives consecutive steps that changed the same paths one line, and keeps every other step its own", () => {
    const t = (step: number, changes: Record<string, string[]>) => ({ id: `T${step}`, step, changes });
    const answers = [31, 30, 29, 28].map((step) => t(step, { session: ["response"] }));
    expect(
      transitionLines([
        ...answers,
        t(27, { session: ["working.notes.n005", "working.status"] }),
        t(26, { session: ["response"] }),
        t(24, { session: ["response"] }),
        t(23, {}),
      ]),
    ).toEqual([
      "- steps 28–31: session: response",
      "- step 27: session: working.notes.n005, working.status",
      "- step 26: session: response",
      "- step 24: session: response",
      "- step 23: (records folded into checkpoints)",
    ]);
  });
});

describe("what other sessions changed (freshnessLines)", () => {
  it("one line per moved scope; a restored branch and a failed check are said, current and unchecked are not", () => {
    const moved = {
      scope: "cwd" as const,
      transitions: 1,
      newest: { id: "t-1a2b3c4d-rest", step: 7 },
      added: ["contract.db"],
      changed: ["working.next"],
      removed: [],
    };
    expect(freshnessLines({ kind: "adopted", moved: [moved] })).toEqual([
      "",
      "## Changed by other sessions since this session's last run (already in state[0])",
      "- cwd: added contract.db; changed working.next (1 transition(s), newest t-1a2b3c4d at its step 7)",
    ]);
    const many = { ...moved, transitions: 0, added: Array.from({ length: 10 }, (_, i) => `working.k${i}`) };
    expect(freshnessLines({ kind: "adopted", moved: [many] })[2]).toMatch(
      /^- cwd: added working\.k0, .*working\.k7 \(\+2 more\); changed working\.next \(its history folded, newest/,
    );
    expect(freshnessLines({ kind: "selectedPast" }).join("\n")).toContain("## Restored branch");
    expect(freshnessLines({ kind: "unavailable", reason: "cwd/meta.json: EACCES" })).toEqual([
      "",
      "## Other sessions' changes",
      "(unavailable: cwd/meta.json: EACCES) state[0] is as this session last read it.",
    ]);
    expect(freshnessLines({ kind: "current" })).toEqual([]);
    expect(freshnessLines({ kind: "unchecked" })).toEqual([]);
  });
});

describe("hasPreFlowContext", () => {
  it("is true only when the bootstrap run has earlier messages (or a stop handoff) to migrate", () => {
    const run = [user("first request"), custom(RUN_ANCHOR, "[run]")];
    expect(hasPreFlowContext(run, "S"), "a new, empty session").toBe(false);
    expect(hasPreFlowContext([user("old"), assistant("old answer"), ...run], "S")).toBe(true);
    expect(hasPreFlowContext([custom(STOP_HANDOFF, "FROZEN"), ...run], "S"), "a restart after stop").toBe(true);
    const interrupted = [user("cut off"), custom(RUN_ANCHOR, "[run]"), assistant("PARTIAL")];
    expect(hasPreFlowContext([...interrupted, ...run], "S"), "only an interrupted State Flow run before").toBe(false);
  });
});

describe("withoutOwnMessages: State Flow's tool calls where its tools are not offered", () => {
  it("drops patch_state and read_state calls and their results, keeps other tools, drops an emptied message", () => {
    const call = (id: string, name: string) => ({ type: "toolCall", id, name, arguments: {} });
    const result = (id: string, toolName: string) =>
      ({ role: "toolResult", toolCallId: id, toolName, content: [], isError: false, timestamp: ++clock }) as never;
    const onlyOwn = { role: "assistant", content: [call("c1", "patch_state")], timestamp: ++clock } as never;
    const mixed = {
      role: "assistant",
      content: [{ type: "text", text: "reading" }, call("c2", "read_state"), call("c3", "read")],
      timestamp: ++clock,
    } as never;
    const kept = withoutOwnMessages([
      user("q"),
      onlyOwn,
      result("c1", "patch_state"),
      mixed,
      result("c2", "read_state"),
      result("c3", "read"),
    ])!;
    expect(kept.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect((kept[1] as { content: { type: string; name?: string }[] }).content.map((b) => b.name ?? b.type)).toEqual([
      "text",
      "read",
    ]);
    expect(withoutOwnMessages([user("q"), assistant("a")]), "nothing to drop: Pi's own context").toBeNull();
  });
});
