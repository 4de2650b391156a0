import { describe, expect, it } from "vitest";
import {
  anthropicBreakpoints,
  compactNative,
  newTokens,
  priceRuns as priceRequests,
  requestOf,
  type Element,
  type PriceModel,
  type Run,
} from "../../bench/cost-model.ts";
import { PrefixCache, type CapturedRequest } from "../../bench/e2e-tokens.ts";

/** Hand-made runs of elements, each request with Pi's three breakpoints by rule. */
const runsOf = (runs: readonly (readonly (readonly Element[])[])[]): Run[] => runs.map((run) => run.map(requestOf));
const priceRuns = (runs: readonly (readonly (readonly Element[])[])[], model: PriceModel) =>
  priceRequests(runsOf(runs), model);
const el = (text: string, tokens: number, role = "user", blocks = 1): Element => ({ text, tokens, role, blocks });
const T = el("tools", 600, "tools", 3);
const S = el("system", 500, "system");
const U1 = el("u1", 100);
const A1 = el("a1", 50, "assistant");
const R1 = el("r1", 1000, "toolResult");
const A2 = el("a2", 20, "assistant");
const U2 = el("u2", 30);

// Run 1: the prompt, then the read result. Run 2: the next prompt after the answer.
const session = [
  [
    [T, S, U1],
    [T, S, U1, A1, R1],
  ],
  [[T, S, U1, A1, R1, A2, U2]],
];

describe("cost model", () => {
  it("bench: the longest prefix shared with any earlier request at 0.1×", () => {
    const [run1, run2] = priceRuns(session, "bench");
    // 1,200 uncached; then 1,050 new + 0.1 × 1,200; then 50 new + 0.1 × 2,250.
    expect(run1).toEqual({ input: 3450, read: 1200, written: 0, cost: 1200 + 1050 + 120, uncached: 2250 });
    expect(run2!.cost).toBeCloseTo(50 + 225, 9);
  });

  it("bench: a differing element shares its common characters pro rata", () => {
    const runs = [[[el("abcdefgh", 800)]], [[el("abcdWXYZ", 800)]]];
    expect(priceRuns(runs, "bench")[1]).toMatchObject({ read: 400, cost: 400 + 40 });
  });

  it("bench prices what PrefixCache bills", () => {
    const message = (role: string, text: string) =>
      role === "user"
        ? { role, content: [{ type: "text", text }], timestamp: 0 }
        : { role, content: [{ type: "text", text }], api: "x", provider: "x", model: "x", stopReason: "stop" };
    const m = [
      message("user", "a".repeat(900)),
      message("assistant", "b".repeat(400)),
      message("user", "c".repeat(50)),
    ];
    const requests: CapturedRequest[] = [
      { systemPrompt: "You are a bench.", tools: [], messages: [m[0]] as never },
      { systemPrompt: "You are a bench.", tools: [], messages: m as never },
    ];
    const cache = new PrefixCache();
    const billed = requests.map((r) => cache.bill(r));
    const elements = new PrefixCache();
    const priced = priceRuns([requests.map((r) => elements.elements(r))], "bench")[0]!;
    expect(priced.read).toBe(billed[0]!.cached + billed[1]!.cached);
    expect(priced.cost).toBeCloseTo(
      billed.reduce((s, b) => s + b.tokens - 0.9 * b.cached, 0),
      9,
    );
  });

  it("anthropic: breakpoints on the last tool, the system prompt and the last user message", () => {
    expect(anthropicBreakpoints([T, S, U1, A1, R1])).toEqual([1, 2, 5]);
    expect(anthropicBreakpoints([T, S, U1, A1])).toEqual([1, 2]);
    expect(anthropicBreakpoints([el("tools", 0, "tools", 0), S, U1])).toEqual([2, 3]);
  });

  it("anthropic: reads a written breakpoint at 0.1×, writes the rest up to the last breakpoint at 1.25×", () => {
    const [run1, run2] = priceRuns(session, "anthropic");
    // Request 1: tools (600) are under 1,024 tokens, so not cached; system (1,100) and the prompt
    // (1,200) are written: 1.25 × 1,200. Request 2: reads the prompt's entry (1,200), writes 1,050.
    expect(run1).toEqual({
      input: 3450,
      read: 1200,
      written: 2250,
      cost: 1.25 * 1200 + 0.1 * 1200 + 1.25 * 1050,
      uncached: 2250,
    });
    // Request 3: reads run 1's last entry (2,250), writes the answer and the new prompt (50).
    expect(run2).toMatchObject({ read: 2250, written: 50 });
    expect(run2!.cost).toBeCloseTo(225 + 62.5, 9);
  });

  it("anthropic: a prefix under 1,024 tokens is never cached", () => {
    const small = [el("tools", 300, "tools", 2), el("system", 200, "system"), el("q", 100)];
    const runs = [[small], [small]];
    expect(priceRuns(runs, "anthropic").map((r) => r.cost)).toEqual([600, 600]);
    expect(priceRuns(runs, "bench").map((r) => r.cost)).toEqual([600, 60]);
  });

  it("anthropic: an entry more than 20 blocks before every breakpoint is not found", () => {
    const filler = Array.from({ length: 21 }, (_, i) => el(`m${i}`, 10, i % 2 ? "user" : "assistant"));
    const runs = [[[T, S, U1]], [[T, S, U1, ...filler, el("last", 10)]]];
    // Falls back to the system prompt's entry (1,100 tokens), written by the first request.
    expect(priceRuns(runs, "anthropic")[1]).toMatchObject({ read: 1100, written: 100 + 210 + 10 });
  });

  it("anthropic-idle: the cache expired between runs, so each run's first request writes again", () => {
    const [run1, run2] = priceRuns(session, "anthropic-idle");
    expect(run1!.cost).toBe(priceRuns(session, "anthropic")[0]!.cost);
    expect(run2).toMatchObject({ read: 0, written: 2300, cost: 1.25 * 2300 });
  });

  it("openai: at least 1,024 shared tokens, read in 128-token increments at 0.5×", () => {
    const [run1, run2] = priceRuns(session, "openai");
    // Request 2 shares 1,200 tokens: 1,024 + 128 cached. Request 3 shares 2,250: 1,024 + 9 × 128.
    expect(run1).toMatchObject({ read: 1152, cost: 1200 + (2250 - 1152) + 0.5 * 1152 });
    expect(run2).toMatchObject({ read: 2176, cost: 2300 - 2176 + 0.5 * 2176 });
    const under = [[[el("p", 1000), el("x", 10)]], [[el("p", 1000), el("y", 10)]]];
    expect(priceRuns(under, "openai")[1]).toMatchObject({ read: 0, cost: 1010 });
  });

  it("compaction: past the threshold, the transcript before the new prompt becomes one summary", () => {
    const t = el("tools", 10, "tools");
    const s = el("system", 10, "system");
    const u1 = el("u1", 600);
    const a1 = el("a1", 10, "assistant");
    const r1 = el("r1", 500, "toolResult");
    const a2 = el("a2", 5, "assistant");
    const u2 = el("u2", 7);
    const runs = [
      [
        [t, s, u1],
        [t, s, u1, a1, r1],
      ],
      [[t, s, u1, a1, r1, a2, u2]],
    ];
    const out = compactNative(runsOf(runs), { thresholdTokens: 1000, summaryTokens: 20, promptTokens: 5 });
    expect(out.compactions).toBe(1);
    expect(out.runs[0]).toEqual(runsOf(runs)[0]);
    const [summarize, next] = out.runs[1]!;
    expect(summarize!.elements.map((e) => e.tokens)).toEqual([5, 1110]);
    expect(next!.elements.map((e) => e.text)).toEqual(["tools", "system", "summary 1", "u2"]);
    expect(next!.cache.blocks.map((e) => e.text)).toEqual(["tools", "system", "summary 1", "u2"]);
    expect(next!.cache.breakpoints).toEqual([1, 2, 4]);
    expect(newTokens(runsOf(runs))).toEqual([1110, 12]);
  });
});
