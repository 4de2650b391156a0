// The anthropic price models on the payload Pi's real Anthropic provider builds (bench/anthropic-payload.ts),
// passed through State Flow's real before_provider_request function (adapters/pi/cache-breakpoints.ts).
import type { Context, Message } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { withStableBreakpoint } from "../../adapters/pi/cache-breakpoints.ts";
import { trailingVolatile } from "../../adapters/pi/context.ts";
import { anthropicPayload } from "../../bench/anthropic-payload.ts";
import { anthropicBreakpoints, priceRuns, type Request } from "../../bench/cost-model.ts";
import { PrefixCache } from "../../bench/e2e-tokens.ts";

const tool = { name: "read", description: "Read a file", parameters: { type: "object", properties: {} } };
const system = `You are Pi. ${"p".repeat(388)}`; // 400 characters: 100 tokens
const stable = "S".repeat(8000); // 2,000 tokens
const user = (...texts: string[]) =>
  ({ role: "user", content: texts.map((text) => ({ type: "text", text })), timestamp: 0 }) as Message;
const assistantCall = (id: string, path: string) =>
  ({
    role: "assistant",
    content: [{ type: "toolCall", id, name: "read", arguments: { path } }],
    api: "faux",
    provider: "faux",
    model: "faux",
    usage: {},
    stopReason: "toolUse",
    timestamp: 0,
  }) as unknown as Message;
const result = (id: string, text: string) =>
  ({
    role: "toolResult",
    toolCallId: id,
    toolName: "read",
    content: [{ type: "text", text }],
    isError: false,
    timestamp: 0,
  }) as Message;
const context = (messages: Message[]): Context => ({ systemPrompt: system, tools: [tool as never], messages });

/** One request as the bench prices it: its elements, and Anthropic's view of the payload after `handler`. */
async function priced(cache: PrefixCache, messages: Message[], handler?: (p: unknown) => unknown): Promise<Request> {
  const c = context(messages);
  const payload = await anthropicPayload(c, handler);
  return {
    elements: cache.elements({ systemPrompt: system, tools: c.tools!, messages }),
    cache: cache.anthropic(payload),
  };
}

describe("the anthropic price models on the real payload", () => {
  it("the stable-block breakpoint lets the next run read the stable prefix though the rest changed", async () => {
    // Two runs: the runtime context (stable, the run's part, volatile) and the prompt; only the
    // stable part stays. Blocks: tool (34 tokens: its 135 characters), system (100), stable
    // (2,000), run (2), volatile (3), prompt (2) = 2,141.
    const run = (n: number) => [user(stable, `RUN ${n}`, `VOLATILE ${n}`), user(`prompt ${n}`)];
    const handler = (n: number) => (p: unknown) => withStableBreakpoint(p, stable, `VOLATILE ${n}`);

    const sfCache = new PrefixCache();
    const sf = [[await priced(sfCache, run(1), handler(1))], [await priced(sfCache, run(2), handler(2))]];
    expect(sf[0]![0]!.cache.blocks.map((b) => b.tokens)).toEqual([34, 100, 2000, 2, 3, 2]);
    expect(sf[0]![0]!.cache.breakpoints, "Pi's three and State Flow's after the stable block").toEqual([1, 2, 3, 6]);
    const [sf1, sf2] = priceRuns(sf, "anthropic");
    // Run 1: the tool's and the system prompt's prefixes are under 1,024 tokens; the stable
    // prefix (2,134) and the whole request (2,141) are written.
    expect(sf1).toEqual({ input: 2141, read: 0, written: 2141, cost: 1.25 * 2141, uncached: 2141 });
    // Run 2: the stable prefix (2,134) is read; the run's part, volatile and prompt (7) written.
    expect(sf2).toMatchObject({ input: 2141, read: 2134, written: 7 });
    expect(sf2!.cost).toBeCloseTo(0.1 * 2134 + 1.25 * 7, 9);

    // The same requests with Pi's three only (no handler): nothing cached is shared, all written again.
    const piCache = new PrefixCache();
    const pi = [[await priced(piCache, run(1))], [await priced(piCache, run(2))]];
    expect(pi[1]![0]!.cache.breakpoints).toEqual([1, 2, 6]);
    expect(priceRuns(pi, "anthropic")[1]).toEqual({
      input: 2141,
      read: 0,
      written: 2141,
      cost: 1.25 * 2141,
      uncached: 2141,
    });
    // anthropic-idle: the cache expired between runs, so the breakpoint does not help across them.
    expect(priceRuns(sf, "anthropic-idle")[1]!.cost).toBe(1.25 * 2141);
  });

  it("Pi's last breakpoint moved off a trailing volatile message: the trajectory stays cached", async () => {
    // One run: the runtime context (stable, run part), the prompt, a read, and the volatile part
    // as the last message, which changes once the read's result is in.
    const volatile = (n: number) => `VOLATILE ${n}`;
    const sent = (n: number) => user(trailingVolatile(volatile(n)));
    const head = [user(stable, "RUN"), user("prompt"), assistantCall("t1", "a"), result("t1", "A".repeat(400))];
    const handler = (n: number) => (p: unknown) => withStableBreakpoint(p, stable, volatile(n));
    const cache = new PrefixCache();
    const first = await priced(cache, [...head, sent(1)], handler(1));
    const second = await priced(
      cache,
      [...head, assistantCall("t2", "b"), result("t2", "B".repeat(40)), sent(2)],
      handler(2),
    );
    // Blocks: tool, system, stable, run, prompt, the call, the result, volatile; Pi's last
    // breakpoint on the volatile block (8) is on the read's result (7) instead.
    expect(first.cache.breakpoints).toEqual([1, 2, 3, 7]);
    expect(second.cache.breakpoints).toEqual([1, 2, 3, 9]);
    const tokens = first.cache.blocks.map((b) => b.tokens);
    expect(tokens).toEqual([34, 100, 2000, 1, 2, 4, 100, 25]);
    const [run] = priceRuns([[first, second]], "anthropic");
    // The first request writes its stable prefix and its prefix up to the read's result (2,241) and
    // sends its volatile part (25, with its marker line) uncached. The second reads that entry, writes
    // the second call and its result (4 + 10), and sends its new volatile part (25) uncached.
    expect(run).toMatchObject({ input: 2266 + 2280, read: 2241, written: 2241 + 14 });
    expect(run!.cost).toBeCloseTo(1.25 * 2241 + 25 + 0.1 * 2241 + 1.25 * 14 + 25, 9);
  });

  it("a native request: the payload's breakpoints are where Pi's rule puts them", async () => {
    // One tool and one block per message: the payload's blocks line up with the elements.
    const messages = [user("first"), assistantCall("t1", "a"), result("t1", "x".repeat(900)), user("again")];
    for (const upTo of [1, 3, 4]) {
      const cache = new PrefixCache();
      const request = await priced(cache, messages.slice(0, upTo));
      expect(request.cache.breakpoints).toEqual(anthropicBreakpoints(request.elements));
      expect(request.cache.blocks.slice(2).map((b) => b.tokens)).toEqual(
        request.elements.slice(2).map((e) => e.tokens),
      );
    }
  });
});
