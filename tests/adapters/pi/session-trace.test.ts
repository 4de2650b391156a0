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
    type Entry = { type: string; message?: { role: string; content: unknown; toolName?: string } };
    const trace = readFileSync(h.session.sessionFile!, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Entry)
      // (Pi 1.6 also records its system prompt as a `system` message when the session starts: not a run's)
      .filter((entry) => entry.type === "message" && entry.message!.role !== "system")
      .map((entry) => {
        const { role, content, toolName } = entry.message!;
        if (role === "toolResult") return `toolResult:${toolName}`;
        const blocks = typeof content === "string" ? [{ type: "text", text: content }] : (content as never[]);
        const said = blocks.map((b: { type: string; text?: string; name?: string }) =>
          b.type === "toolCall" ? `call ${b.name}` : b.type === "text" ? b.text : "",
        );
        return `${role}:${said.filter(Boolean).join(" ")}`;
      });
    // Every message of every run, in order: the requests, each tool call and its result, the answers.
    const run = (n: number) => [
      `user:request ${n}`,
      "assistant:call read",
      "toolResult:read",
      "assistant:call patch_state",
      "toolResult:patch_state",
      `assistant:answer ${n}`,
    ];
    expect(trace).toEqual([...run(1), ...run(2), ...run(3)]);
  });
});
