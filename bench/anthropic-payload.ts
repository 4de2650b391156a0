// The request body Pi would send to Anthropic for a context the faux model received: pi-ai's own
// Anthropic provider builds it (anthropic-messages `stream`, stopped in its onPayload hook before
// any network request, as tests/adapters/pi/cache-breakpoints.test.ts does), then it goes through
// the session's own onPayload, which is Pi's `before_provider_request` chain (pi-coding-agent
// 0.84.4, core/sdk.js) — so a State Flow session's payload carries the breakpoints State Flow's
// real handler sets (adapters/pi/cache-breakpoints.ts), with the runtime context it sent for
// this very request, and a native session's carries Pi's three.
//
// The anthropic price models (bench/cost-model.ts) read it as Anthropic caches it: content blocks
// in order (the tools, the system prompt's blocks, each message's blocks), and the blocks that
// carry `cache_control`.

import type { Context, Model } from "@earendil-works/pi-ai";
import * as piAi from "@earendil-works/pi-ai";
import { stream } from "@earendil-works/pi-ai/api/anthropic-messages";

/**
 * The context as the installed Pi's providers take it: Pi 1.6 carries the system prompt and tools as
 * system messages (`normalizeContext`); Pi 0.84 takes the context as it is.
 */
const transcript = (context: Context): never =>
  ((piAi as { normalizeContext?: (c: Context) => unknown }).normalizeContext?.(context) ?? context) as never;

const model = {
  id: "claude-sonnet-4-5",
  name: "Claude Sonnet 4.5",
  api: "anthropic-messages",
  provider: "anthropic",
  baseUrl: "http://127.0.0.1:9",
  reasoning: false,
  input: ["text", "image"],
  cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  contextWindow: 200_000,
  maxTokens: 1024,
} as unknown as Model<"anthropic-messages">;

type OnPayload = (payload: unknown, model: Model<string>) => unknown;

const STOP = new Error("payload captured");

/**
 * Pi's Anthropic payload for `context` (caching on, Pi's default short retention), after
 * `onPayload` (the session's before_provider_request chain; none for a bare provider request).
 */
export async function anthropicPayload(context: Context, onPayload?: OnPayload): Promise<AnthropicPayload> {
  let captured: unknown;
  let failure: unknown;
  const events = stream(model, transcript(context), {
    apiKey: "sk-ant-bench",
    cacheRetention: "short",
    onPayload: async (params: unknown, m: Model<string>) => {
      try {
        const next = onPayload ? await onPayload(params, m) : undefined;
        captured = next ?? params;
      } catch (error) {
        failure = error;
      }
      throw STOP;
    },
  } as never);
  for await (const event of events) if (event.type === "error" || event.type === "done") break;
  if (failure) throw failure;
  if (!captured) throw new Error("Pi's Anthropic provider built no payload");
  return captured as AnthropicPayload;
}

export interface AnthropicBlock {
  readonly type?: string;
  readonly cache_control?: unknown;
  readonly [key: string]: unknown;
}

export interface AnthropicPayload {
  readonly tools?: readonly AnthropicBlock[];
  readonly system?: readonly AnthropicBlock[];
  readonly messages: readonly { readonly role: string; readonly content: string | readonly AnthropicBlock[] }[];
}

/** One content block in cache order, with the role of its message and whether it opens that message. */
export interface PayloadBlock {
  readonly role: string;
  readonly block: AnthropicBlock;
  /** The first block of its message (a message boundary is part of the cached prefix). */
  readonly opens: boolean;
}

/** The payload's content blocks in the order Anthropic caches them: tools, system, messages. */
export function payloadBlocks(payload: AnthropicPayload): PayloadBlock[] {
  const out: PayloadBlock[] = [];
  for (const block of payload.tools ?? []) out.push({ role: "tools", block, opens: true });
  for (const block of payload.system ?? []) out.push({ role: "system", block, opens: true });
  for (const message of payload.messages) {
    const blocks = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    blocks.forEach((block, i) => out.push({ role: message.role, block, opens: i === 0 }));
  }
  return out;
}
