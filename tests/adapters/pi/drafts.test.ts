import type { AgentMessage } from "@earendil-works/pi-agent-core";
import { describe, expect, it } from "vitest";
import { answerText, draftEnding, isAssistant, toolCalls } from "../../../adapters/pi/drafts.ts";

const assistant = (content: unknown[], stopReason = "stop") =>
  ({ role: "assistant", content, stopReason, timestamp: 1 }) as unknown as Extract<AgentMessage, { role: "assistant" }>;
const text = (t: string) => ({ type: "text", text: t });
const tool = (id: string, name: string) => ({ type: "toolCall", id, name, arguments: {} });

describe("draftEnding", () => {
  it("a message calling tools is not terminal", () => {
    expect(draftEnding(assistant([text("x"), tool("1", "read")], "toolUse"))).toBeNull();
  });
  it("complete needs visible text; thinking alone is empty", () => {
    expect(draftEnding(assistant([text("answer")]))).toBe("complete");
    expect(draftEnding(assistant([{ type: "thinking", thinking: "hmm" }, text("  ")]))).toBe("empty");
    expect(draftEnding(assistant([]))).toBe("empty");
  });
  it.each(["aborted", "length", "error"])("%s is interrupted even with text", (reason) => {
    expect(draftEnding(assistant([text("partial")], reason))).toBe(reason);
  });
});

describe("message helpers", () => {
  it("answerText joins text blocks without thinking; toolCalls lists ids and names", () => {
    const m = assistant([{ type: "thinking", thinking: "no" }, text("a"), text("b"), tool("c1", "patch_state")]);
    expect(answerText(m)).toBe("ab");
    expect(toolCalls(m)).toEqual([{ id: "c1", name: "patch_state" }]);
    expect(isAssistant(m)).toBe(true);
    expect(isAssistant({ role: "user", content: "x", timestamp: 1 } as AgentMessage)).toBe(false);
  });
});
