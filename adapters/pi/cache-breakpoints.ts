// A prompt-cache breakpoint at the end of the runtime context's stable part, for providers that
// take explicit breakpoints (Anthropic's Messages API: `cache_control` on a content block, at most
// four per request). Pi's Anthropic provider (pi-ai, api/anthropic-messages.js, buildParams and
// convertMessages) sets three itself: the last tool, the system prompt, and the last block of the
// last message when it is a user message; Pi hands an extension the finished payload in
// `before_provider_request` and sends what the handler returns (pi-coding-agent 0.84.4,
// core/extensions/runner.js emitBeforeProviderRequest). Without the fourth, the stable part is
// cached only as part of a whole earlier request, so a new run, whose request part differs,
// re-reads it uncached.
//
// When the volatile part follows the run's trajectory as its own last message, Pi's last
// breakpoint lands on it; it is moved to the block before, so the trajectory stays cached and only
// the small volatile part is read uncached. Any other payload shape (other providers, whose
// caches are automatic prefixes) is left as it is.

import { trailingVolatile } from "./context.ts";
type Block = { type?: unknown; text?: unknown; cache_control?: unknown };
type Message = { role?: unknown; content?: unknown };

/** Anthropic allows this many cache breakpoints per request. */
export const MAX_BREAKPOINTS = 4;

const blocksOf = (message: Message): Block[] | null =>
  Array.isArray(message.content) ? (message.content as Block[]) : null;

/** Blocks that may carry a breakpoint (Anthropic refuses one on thinking blocks). */
const CACHEABLE = new Set(["text", "image", "document", "tool_result", "tool_use"]);

function breakpoints(payload: Record<string, unknown>): { count: number; template: unknown } {
  let count = 0;
  let template: unknown;
  const visit = (blocks: unknown) => {
    if (!Array.isArray(blocks)) return;
    for (const block of blocks as Block[]) {
      if (block && typeof block === "object" && block.cache_control) {
        count++;
        template ??= block.cache_control;
      }
    }
  };
  visit(payload.system);
  visit(payload.tools);
  for (const message of payload.messages as Message[]) visit(blocksOf(message));
  return { count, template };
}

/**
 * The payload with a breakpoint after the block holding `stable`, and Pi's last-message breakpoint
 * moved off a trailing message holding only `volatile`; undefined when there is nothing to do (not
 * an Anthropic Messages payload, caching off, the stable part not found, no breakpoint left).
 */
export function withStableBreakpoint(payload: unknown, stable: string, volatile: string): unknown {
  if (!payload || typeof payload !== "object") return undefined;
  const request = payload as Record<string, unknown>;
  if (!Array.isArray(request.messages)) return undefined;
  const messages = request.messages as Message[];
  const { count, template } = breakpoints(request);
  if (template === undefined) return undefined;
  let changed = false;
  const last = messages[messages.length - 1];
  const lastBlocks = last ? blocksOf(last) : null;
  const previous = messages.length > 1 ? blocksOf(messages[messages.length - 2]!) : null;
  const sent = trailingVolatile(volatile);
  const trailing = lastBlocks?.length === 1 && lastBlocks[0]!.text === sent ? lastBlocks[0]! : null;
  const before = previous?.[previous.length - 1];
  if (trailing?.cache_control && before && CACHEABLE.has(before.type as string) && !before.cache_control) {
    before.cache_control = trailing.cache_control;
    delete trailing.cache_control;
    changed = true;
  }
  const stableBlock = messages
    .filter((m) => m.role === "user")
    .flatMap((m) => blocksOf(m) ?? [])
    .find((b) => b.type === "text" && b.text === stable);
  if (stableBlock && !stableBlock.cache_control && count < MAX_BREAKPOINTS) {
    stableBlock.cache_control = template;
    changed = true;
  }
  return changed ? payload : undefined;
}
