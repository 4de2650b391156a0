// The stable-part breakpoint against the payload Pi's real Anthropic provider builds (pi-ai's
// anthropic-messages `stream`, stopped in its onPayload hook before any network request): Pi's
// own three breakpoints are where its code puts them, State Flow adds the fourth after the stable
// part and moves Pi's last-message breakpoint off a trailing volatile message.
import type { AgentMessage } from "@earendil-works/pi-agent-core";
import type { Context, Model } from "@earendil-works/pi-ai";
import * as piAi from "@earendil-works/pi-ai";
import { stream } from "@earendil-works/pi-ai/api/anthropic-messages";
import { describe, expect, it } from "vitest";
import { MAX_BREAKPOINTS, withStableBreakpoint } from "../../../adapters/pi/cache-breakpoints.ts";
import { SMALL_VOLATILE, projectContext, trailingVolatile } from "../../../adapters/pi/context.ts";

/**
 * The context as the installed Pi's providers take it: Pi 1.6 carries the system prompt and tools as
 * system messages (`normalizeContext`); Pi 0.84 takes the context as it is.
 */
const transcript = (context: Context): never =>
  ((piAi as { normalizeContext?: (c: Context) => unknown }).normalizeContext?.(context) ?? context) as never;

const model = {
  id: "claude-sonnet-4-5",
  name: "Claude",
  api: "anthropic-messages",
  provider: "anthropic",
  baseUrl: "http://127.0.0.1:9",
  reasoning: false,
  input: ["text"],
  cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  contextWindow: 200_000,
  maxTokens: 1024,
} as unknown as Model<"anthropic-messages">;

const stop = new Error("payload captured");

/** The request body Pi's Anthropic provider would send for this context. */
async function payloadOf(context: Context, cacheRetention: "short" | "none" = "short"): Promise<any> {
  let captured: unknown;
  const events = stream(model, transcript(context), {
    apiKey: "sk-ant-test",
    cacheRetention,
    onPayload: (params: unknown) => {
      captured = structuredClone(params);
      throw stop;
    },
  } as never);
  for await (const event of events) if (event.type === "error" || event.type === "done") break;
  if (!captured) throw new Error("the provider built no payload");
  return captured;
}

const parts = {
  stable: "STABLE state[0]",
  run: "RUN parts",
  volatile: `VOLATILE paths ${"v".repeat(SMALL_VOLATILE)}`,
};
const tool = { name: "read", description: "Read a file", parameters: { type: "object", properties: {} } };
const marks = (payload: any): string[] => {
  const out: string[] = [];
  if (payload.system?.some((b: any) => b.cache_control)) out.push("system");
  if (payload.tools?.some((t: any) => t.cache_control)) out.push("tools");
  payload.messages.forEach((m: any, i: number) =>
    (Array.isArray(m.content) ? m.content : []).forEach((b: any) => {
      if (b.cache_control) out.push(`${i}:${b.type}:${(b.text ?? b.tool_use_id ?? "").slice(0, 40)}`);
    }),
  );
  return out;
};

function context(messages: AgentMessage[]): Context {
  const projected = projectContext({
    messages,
    mode: "steady",
    sessionId: "S",
    runtimeContext: parts,
    discardedDrafts: new Set(),
  });
  return { systemPrompt: "You are Pi.", tools: [tool as never], messages: projected as never };
}

const user = (text: string) => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 }) as AgentMessage;
const anchor = {
  role: "custom",
  customType: "state-flow-run",
  content: "[run]",
  display: false,
  details: { sessionId: "S" },
  timestamp: 2,
} as unknown as AgentMessage;

describe("the stable part's cache breakpoint on Pi's Anthropic payload", () => {
  it("volatile inside the runtime context: Pi's three breakpoints plus one after the stable part", async () => {
    const payload = await payloadOf(context([user("Hi"), anchor]));
    expect(marks(payload), "where Pi's provider puts its own").toEqual(["system", "tools", "1:text:Hi"]);
    expect(withStableBreakpoint(payload, parts.stable, parts.volatile)).toBe(payload);
    expect(marks(payload)).toEqual(["system", "tools", "0:text:STABLE state[0]", "1:text:Hi"]);
    expect(payload.messages[0].content.map((b: any) => b.text)).toEqual([parts.stable, parts.run, parts.volatile]);
  });

  it("volatile after the trajectory: Pi's last breakpoint moves to the trajectory's end", async () => {
    const payload = await payloadOf(
      context([user(`a request longer than the volatile part ${"r".repeat(SMALL_VOLATILE + 40)}`), anchor]),
    );
    expect(payload.messages.at(-1).content).toEqual([
      expect.objectContaining({ text: trailingVolatile(parts.volatile) }),
    ]);
    expect(marks(payload).at(-1)).toMatch(/^2:text:\[State Flow runtime context, contin/);
    withStableBreakpoint(payload, parts.stable, parts.volatile);
    expect(marks(payload)).toEqual([
      "system",
      "tools",
      "0:text:STABLE state[0]",
      "1:text:a request longer than the volatile part ",
    ]);
    expect(marks(payload)).toHaveLength(MAX_BREAKPOINTS);
  });

  it("adds nothing when caching is off, when all four are used, or for another provider's payload", async () => {
    const off = await payloadOf(context([user("Hi"), anchor]), "none");
    expect(withStableBreakpoint(off, parts.stable, parts.volatile)).toBeUndefined();
    expect(marks(off)).toEqual([]);
    const full = await payloadOf(context([user("Hi"), anchor]));
    full.system.push({ type: "text", text: "more", cache_control: { type: "ephemeral" } });
    expect(withStableBreakpoint(full, parts.stable, parts.volatile)).toBeUndefined();
    expect(marks(full), "system (two blocks), tools, the last message").toEqual(["system", "tools", "1:text:Hi"]);
    const openai = { model: "gpt", messages: [{ role: "user", content: parts.stable }] };
    expect(withStableBreakpoint(openai, parts.stable, parts.volatile)).toBeUndefined();
    expect(withStableBreakpoint(undefined, parts.stable, parts.volatile)).toBeUndefined();
  });
});
