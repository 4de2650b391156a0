// Classifies a finalized assistant message for terminal resolution: a message that still calls
// tools is not terminal; a terminal one is complete, or interrupted (aborted, length-limited,
// provider error, empty) — and an interrupted ending never becomes the response.

import type { AgentMessage } from "@earendil-works/pi-agent-core";
import type { DraftEnding } from "../../machines/resolution.ts";

type Assistant = Extract<AgentMessage, { role: "assistant" }>;

export function isAssistant(message: AgentMessage): message is Assistant {
  return message.role === "assistant";
}

/** The visible answer text of an assistant message (thinking excluded). */
export function answerText(message: Assistant): string {
  return message.content
    .filter((block): block is Extract<(typeof message.content)[number], { type: "text" }> => block.type === "text")
    .map((block) => block.text)
    .join("")
    .trim();
}

export function toolCalls(message: Assistant): { id: string; name: string }[] {
  return message.content
    .filter(
      (block): block is Extract<(typeof message.content)[number], { type: "toolCall" }> => block.type === "toolCall",
    )
    .map((block) => ({ id: block.id, name: block.name }));
}

/** null when the message is not terminal (it calls tools and the run continues). */
export function draftEnding(message: Assistant): DraftEnding | null {
  switch (message.stopReason) {
    case "aborted":
      return "aborted";
    case "length":
      return "length";
    case "error":
      return "error";
    default:
      if (toolCalls(message).length > 0) return null;
      return answerText(message).length > 0 ? "complete" : "empty";
  }
}
