// The demo driver's condensing printers, fed what State Flow really sends: the runtime context rendered by
// adapters/pi/context.ts. If that text's sections change shape, the demo would print "(unparsed)" or drop a
// line without failing; this test fails instead. (The driver's session handling runs in the demo tests.)
import { describe, expect, it } from "vitest";
import type { Message } from "@earendil-works/pi-ai";
import { compact, describeMessages, describeRuntimeContext, trimState } from "../../scripts/demo-driver.ts";
import {
  CONTINUED_MARKER,
  renderRuntimeContext,
  renderRuntimeContextParts,
  trailingVolatile,
} from "../../adapters/pi/context.ts";
import { trieOf } from "../../adapters/pi/stability.ts";
import { emptyScopeState } from "../../storage/core/scope-state.ts";
import { NO_SPECIFICATION } from "../../machines/specification.ts";

const user = (text: string) => ({ role: "user", content: [{ type: "text", text }], timestamp: 0 }) as Message;

describe("describeRuntimeContext", () => {
  it("merges the stable and volatile state back into one line with its step, and lists the sections", () => {
    const text = renderRuntimeContext({
      specification: { ...NO_SPECIFICATION, request: "Add a --done flag." },
      state: {
        ...emptyScopeState(),
        contract: { storage: "todos.json" },
        working: { task: "--done flag", status: "planned" },
        response: "Done.",
      },
      volatile: trieOf([["working", "status"]]),
      step: 4,
      transitions: [
        { id: "T4", step: 4, changes: { session: ["working.status"] } },
        { id: "T3", step: 3, changes: { cwd: ["contract.storage"] } },
      ],
      invalidations: [{ path: "/k/a.md", reason: "changed" }],
      resolutionNote: "Attempt 2 of 3",
      bootstrap: true,
    });
    const lines = describeRuntimeContext(text);
    expect(lines[0]).toBe("request:      Add a --done flag.");
    expect(lines[1]).toBe(
      'state[0]:     step 4 {"contract":{"storage":"todos.json"},' +
        '"working":{"task":"--done flag","status":"planned"},"response":"Done."}',
    );
    expect(lines).toContain("transitions:  step 4: session: working.status | step 3: cwd: contract.storage");
    expect(lines).toContain("invalidated:  /k/a.md: changed");
    expect(lines).toContain("resolution:   Attempt 2 of 3");
    expect(lines.some((l) => l.startsWith("bootstrap:    yes"))).toBe(true);
  });

  it("ends the run part's last section where the volatile part, sent as its own message, begins", () => {
    const parts = renderRuntimeContextParts({
      specification: { ...NO_SPECIFICATION, request: "Anything to revisit?" },
      state: { ...emptyScopeState(), working: { next: "re-read" } },
      volatile: trieOf([]),
      step: 12,
      transitions: [],
      invalidations: [{ path: "/k/a.md", reason: "changed" }],
      resolutionNote: null,
      bootstrap: false,
    });
    // As the driver joins them: the runtime-context message, then the trailing volatile message.
    const lines = describeRuntimeContext(`${parts.stable}\n\n${parts.run}\n${trailingVolatile(parts.volatile)}`);
    expect(lines).toContain("invalidated:  /k/a.md: changed");
    expect(lines).toContain("transitions:  (none yet on this branch)");
    expect(lines).toContain('state[0]:     step 12 {"working":{"next":"re-read"}}');
  });
});

describe("describeMessages", () => {
  it("names State Flow's own messages by role and shortens user prompts", () => {
    const messages = [
      user("[State Flow runtime context — assistant-produced state, fallible; it is not an instruction]\n…"),
      user("a request that is definitely longer than forty characters"),
      user(`${CONTINUED_MARKER}\n(state[0] is the state at step 2)`),
    ];
    expect(describeMessages(messages)).toBe(
      'runtime-context, user "a request that is definitely longer tha…", runtime-context (volatile part)',
    );
  });
});

describe("compact and trimState", () => {
  it("drop empty fields and cut long JSON with an ellipsis", () => {
    expect(trimState({ artifacts: {}, contract: { a: 1 }, response: "" })).toEqual({ contract: { a: 1 } });
    expect(compact({ text: "x".repeat(50) }, 20)).toBe('{"text":"xxxxxxxxxx…');
  });
});
