// Prices a session's provider requests the way real providers bill input tokens with their prompt
// caches. Input: the session's runs, each a list of requests, each a list of elements (the tools,
// the system prompt, then one element per message, in the order a provider renders them; see
// bench/e2e-tokens.ts, which also counts their tokens with Pi's estimator). Output tokens are not
// priced. Prices are in units of one uncached input token.
//
//   bench           what `npm run bench` has always billed: the longest prefix this request shares
//                   with ANY earlier request (whole elements, then the common characters of the
//                   first differing element, pro rata) is read at 0.1×; everything else costs 1×.
//   anthropic       explicit breakpoints where Pi's Anthropic provider puts them: on the last tool,
//                   on the system prompt and on the last block of the last (user) message
//                   (pi-ai 0.84.4 dist/api/anthropic-messages.js:1047, :769, :1003/:1011; 1.6.0
//                   :1521, :1136, :1419/:1427). A request reads the longest prefix that an earlier
//                   request wrote at one of its breakpoints and that ends at most 20 content blocks
//                   before one of this request's breakpoints (Anthropic's lookback), at 0.1×. Each
//                   breakpoint past that point whose prefix holds ≥ 1,024 tokens is written: the
//                   tokens from the read point to the last written breakpoint cost 1.25×, the rest
//                   1×. A prefix under 1,024 tokens is never cached.
//   anthropic-idle  the same, but the cache expired between runs (more than its 5 minutes): every
//                   run starts with an empty cache, so its first request writes again.
//   openai          automatic prefix caching: the longest prefix shared with any earlier request, if
//                   at least 1,024 tokens, is read in 128-token increments (1,024 + 128·k) at 0.5×;
//                   no write surcharge.
//
// `compactNative` models Pi's compaction on native's requests: whenever a run starts with the
// last request above 128k tokens, the transcript before the new prompt is replaced by a summary of
// 2,000 tokens, and the summarization itself is billed as one more request (Pi sends the
// serialized transcript as a single user message under its own system prompt, so it shares no
// prefix with the session's requests).

import { commonPrefix, lowerBound, type Element } from "./e2e-tokens.ts";

export type { Element };
export type Request = readonly Element[];
export type Run = readonly Request[];

export type PriceModel = "bench" | "anthropic" | "anthropic-idle" | "openai";
export const PRICE_MODELS: readonly PriceModel[] = ["bench", "anthropic", "anthropic-idle", "openai"];

export const ANTHROPIC = { read: 0.1, write: 1.25, minimum: 1024, lookbackBlocks: 20 } as const;
export const OPENAI = { read: 0.5, minimum: 1024, increment: 128 } as const;
export const BENCH_READ = 0.1;

export interface RequestCost {
  /** Input tokens of the request. */
  readonly input: number;
  /** Of those, read from the cache. */
  readonly read: number;
  /** Of those, written to the cache (billed with the write surcharge). */
  readonly written: number;
  /** Price in uncached-input-token units. */
  readonly cost: number;
}

export interface RunCost extends RequestCost {
  /** Input tokens not read from the cache (written or plain). */
  readonly uncached: number;
}

interface Node {
  readonly children: Map<string, Node>;
  /** The children's keys in sorted order (partial match of a differing element). */
  readonly sorted: string[];
  /** Anthropic: a cache entry ends here. */
  written: boolean;
}

const node = (): Node => ({ children: new Map(), sorted: [], written: false });

function child(at: Node, key: string): Node {
  let next = at.children.get(key);
  if (!next) {
    next = node();
    at.children.set(key, next);
    at.sorted.splice(lowerBound(at.sorted, key), 0, key);
  }
  return next;
}

const total = (request: Request) => request.reduce((s, e) => s + e.tokens, 0);

/** Tokens of the longest prefix shared with any request inserted before (whole elements, then characters). */
function sharedPrefix(root: Node, request: Request): number {
  let at = root;
  let shared = 0;
  for (const element of request) {
    const next = at.children.get(element.text);
    if (next) {
      shared += element.tokens;
      at = next;
      continue;
    }
    const i = lowerBound(at.sorted, element.text);
    const chars = Math.max(
      i > 0 ? commonPrefix(at.sorted[i - 1]!, element.text) : 0,
      i < at.sorted.length ? commonPrefix(at.sorted[i]!, element.text) : 0,
    );
    return shared + Math.floor((element.tokens * chars) / Math.max(1, element.text.length));
  }
  return shared;
}

function insert(root: Node, request: Request): void {
  let at = root;
  for (const element of request) at = child(at, element.text);
}

/** Where Pi's Anthropic provider puts cache_control: prefix lengths (in elements) that end at a breakpoint. */
export function anthropicBreakpoints(request: Request): number[] {
  const points: number[] = [];
  request.forEach((e, i) => {
    if (e.role === "tools" && e.blocks > 0) points.push(i + 1); // the last tool definition
    if (e.role === "system" && e.blocks > 0) points.push(i + 1); // the system prompt's block
  });
  const last = request.at(-1);
  // The last message's last block, when that message is the user's (a prompt or tool results).
  if (last && (last.role === "user" || last.role === "toolResult")) points.push(request.length);
  return [...new Set(points)].sort((a, b) => a - b);
}

function priceAnthropic(root: Node, request: Request): RequestCost {
  const prefix = [0];
  const blocks = [0];
  for (const e of request) (prefix.push(prefix.at(-1)! + e.tokens), blocks.push(blocks.at(-1)! + e.blocks));
  // The trie path this request shares with earlier ones: path[p] ends after p elements.
  const path: Node[] = [root];
  for (const e of request) {
    const next = path.at(-1)!.children.get(e.text);
    if (!next) break;
    path.push(next);
  }
  const points = anthropicBreakpoints(request);
  let hit = 0;
  for (const b of points)
    for (let p = Math.min(b, path.length - 1); p > hit && blocks[b]! - blocks[p]! <= ANTHROPIC.lookbackBlocks; p--)
      if (path[p]!.written) {
        hit = p;
        break;
      }
  let lastWritten = hit;
  let at = root;
  let depth = 0;
  for (const b of points) {
    if (b <= hit || prefix[b]! < ANTHROPIC.minimum) continue;
    for (; depth < b; depth++) at = child(at, request[depth]!.text);
    at.written = true;
    lastWritten = b;
  }
  const input = prefix.at(-1)!;
  const read = prefix[hit]!;
  const written = prefix[lastWritten]! - read;
  const plain = input - read - written;
  return { input, read, written, cost: ANTHROPIC.read * read + ANTHROPIC.write * written + plain };
}

/** Prices one request against the cache state `root`, then adds it to that state. */
function priceRequest(root: Node, request: Request, model: PriceModel): RequestCost {
  if (model === "anthropic" || model === "anthropic-idle") return priceAnthropic(root, request);
  const input = total(request);
  const shared = sharedPrefix(root, request);
  insert(root, request);
  if (model === "bench") return { input, read: shared, written: 0, cost: input - shared + BENCH_READ * shared };
  const read =
    shared < OPENAI.minimum
      ? 0
      : OPENAI.minimum + Math.floor((shared - OPENAI.minimum) / OPENAI.increment) * OPENAI.increment;
  return { input, read, written: 0, cost: input - read + OPENAI.read * read };
}

/** Every request of every run priced under `model`, in order; the cost per run. */
export function priceRuns(runs: readonly Run[], model: PriceModel): RunCost[] {
  let root = node();
  return runs.map((run) => {
    if (model === "anthropic-idle") root = node();
    let input = 0;
    let read = 0;
    let written = 0;
    let cost = 0;
    for (const request of run) {
      const c = priceRequest(root, request, model);
      input += c.input;
      read += c.read;
      written += c.written;
      cost += c.cost;
    }
    return { input, read, written, cost, uncached: input - read };
  });
}

export interface CompactionOptions {
  /** Compact before a run whose previous request carried more input tokens than this. */
  readonly thresholdTokens: number;
  readonly summaryTokens: number;
  /**
   * Pi's summarization system prompt and instructions around the serialized transcript: 310 + 879
   * characters in 0.84.4 (dist/core/compaction/utils.js, compaction.js SUMMARIZATION_PROMPT).
   */
  readonly promptTokens: number;
}

export const COMPACTION: CompactionOptions = { thresholdTokens: 128_000, summaryTokens: 2_000, promptTokens: 300 };

/**
 * Native's runs as Pi would send them with compaction: before a run whose previous request was
 * above `thresholdTokens`, the transcript so far becomes one summary message of `summaryTokens`
 * (each summary new, so never cached), and the run first pays the summarization request (the
 * transcript's messages plus Pi's summarization prompt, as one user message of its own).
 */
export function compactNative(
  runs: readonly Run[],
  options: CompactionOptions = COMPACTION,
): { runs: Run[]; compactions: number } {
  let cut = 0;
  let summary: Element | null = null;
  let compactions = 0;
  let last: Request | null = null;
  const out: Run[] = [];
  for (const run of runs) {
    const requests: Request[] = [];
    const first = run[0];
    if (first && last && total(last) > options.thresholdTokens) {
      compactions++;
      const transcript = last.slice(2).reduce((s, e) => s + e.tokens, 0);
      requests.push([
        { text: "system:summarization", tokens: options.promptTokens, role: "system", blocks: 1 },
        { text: `compaction ${compactions}`, tokens: transcript, role: "user", blocks: 1 },
      ]);
      cut = first.length - 3; // every message before this run's prompt
      summary = { text: `summary ${compactions}`, tokens: options.summaryTokens, role: "user", blocks: 1 };
    }
    for (const request of run) {
      const kept = request.slice(2 + cut);
      requests.push([request[0]!, request[1]!, ...(summary ? [summary] : []), ...kept]);
    }
    last = requests.at(-1) ?? last;
    out.push(requests);
  }
  return { runs: out, compactions };
}

/** Per run, the tokens of messages no earlier request carried: what the run adds to the conversation. */
export function newTokens(runs: readonly Run[]): number[] {
  const seen = new Set<string>();
  return runs.map((run) => {
    let fresh = 0;
    for (const request of run)
      for (const e of request.slice(2))
        if (!seen.has(e.text)) {
          seen.add(e.text);
          fresh += e.tokens;
        }
    return fresh;
  });
}
