// 001: State Flow replaces what the model is sent, never Pi's inspectable session trace. After runs that
// patched, read files and answered, the session file still holds every user message, every assistant
// message with its tool calls and every tool result, in order, while the last request carried only
// the state and the current run.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { call, contextText, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

describe("Pi's session trace under State Flow", () => {
  it("keeps every message of every run on disk while the projection sends the state instead", async () => {
    const h = await harness({ sessionKind: "file" });
    writeFileSync(join(h.cwd, "notes.md"), "the notes\n");
    await h.command("/state-flow-start");
    for (const n of [1, 2, 3]) {
      h.script(
        call("read", { path: join(h.cwd, "notes.md") }),
        call("patch_state", { session: { working: { [`run${n}`]: n } }, final: true }),
        say(`answer ${n}`),
      );
      await h.prompt(`request ${n}`);
    }
    const last = contextText(h.contexts.at(-1)!);
    expect(last, "the projection: the earlier runs are not replayed").not.toContain("request 1");
    const trace = readFileSync(h.session.sessionFile!, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string; message?: { role: string; content: unknown } })
      .filter((entry) => entry.type === "message")
      .map((entry) => {
        const { role, content } = entry.message!;
        const text = JSON.stringify(content);
        const said = /request \d|answer \d/.exec(text)?.[0];
        return `${role}:${said ?? (text.includes("patch_state") ? "patch_state" : "")}`;
      });
    for (const n of [1, 2, 3]) {
      expect(trace).toContain(`user:request ${n}`);
      expect(trace).toContain(`assistant:answer ${n}`);
    }
    expect(trace.filter((t) => t === "toolResult:")).toHaveLength(6);
    expect(trace.indexOf("user:request 2")).toBeGreaterThan(trace.indexOf("assistant:answer 1"));
  });
});
