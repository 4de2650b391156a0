// Prices a session's provider requests the way real providers bill input tokens with their prompt
// caches. Input: the session's runs, each a list of requests, each a list of elements (the tools,
// the system prompt, then one element per message, in the order a provider renders them; see
// bench/e2e-tokens.ts, which also counts their tokens with Pi's estimator). Output tokens are not
// priced. Prices are in units of one uncached input token.
//
//   bench           what `npm run bench` has always billed: the longest prefix this request shares
//                   with ANY earlier request (whole elements, then the common characters of the
//                   first differing element, pro rata) is read at 0.1×; everything else costs 1×.
//   anthropic       explicit breakpoints where the request Pi would send to Anthropic carries them:
//                   the payload pi-ai's own Anthropic provider builds from the captured context,
//                   passed through the session's before_provider_request handlers
//                   (bench/anthropic-payload.ts), read as its content blocks (Request.cache). A
//                   native request carries Pi's three (the last tool, the system prompt, the last
//                   block of the last user message); a State Flow request the ones State Flow's
//                   handler leaves (adapters/pi/cache-breakpoints.ts: one after the runtime
//                   context's stable block, Pi's last one moved off a trailing volatile message).
//                   A request reads the longest prefix that an earlier request wrote at one of its
//                   breakpoints and that ends at most 20 content blocks before one of this
//                   request's breakpoints (Anthropic's lookback), at 0.1×. Each breakpoint past
//                   that point whose prefix holds ≥ 1,024 tokens is written: the tokens from the
//                   read point to the last written breakpoint cost 1.25×, the rest 1×. A prefix
//                   under 1,024 tokens is never cached. A request made of elements alone (the
//                   tests' hand-made ones) takes Pi's three by rule (`anthropicBreakpoints`).
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

import { commonPrefix, lowerBound, type CacheBlocks, type Element } from "./e2e-tokens.ts";

export type { CacheBlocks, Element };

export interface Request {
  /** The tools, the system prompt, one element per message (the bench and openai models). */
  readonly elements: readonly Element[];
  /** Anthropic's view: the payload's content blocks and its breakpoints (the anthropic models). */
  readonly cache: CacheBlocks;
}
export type Run = readonly Request[];

/** A request known only by its elements: Anthropic's view is the elements with Pi's three breakpoints. */
export const requestOf = (elements: readonly Element[]): Request => ({
  elements,
  cache: { blocks: elements, breakpoints: anthropicBreakpoints(elements) },
});

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

const total = (elements: readonly Element[]) => elements.reduce((s, e) => s + e.tokens, 0);

/** Tokens of the longest prefix shared with any request inserted before (whole elements, then characters). */
function sharedPrefix(root: Node, request: readonly Element[]): number {
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

function insert(root: Node, request: readonly Element[]): void {
  let at = root;
  for (const element of request) at = child(at, element.text);
}

/**
 * Where Pi's Anthropic provider puts cache_control, by rule, for requests known only by their
 * elements: prefix lengths (in elements) that end at a breakpoint (pi-ai 0.84.4
 * dist/api/anthropic-messages.js convertTools, buildParams, convertMessages). The bench's own
 * requests carry the breakpoints of the real payload instead (tests/bench/cost-model.test.ts
 * checks this rule against it).
 */
export function anthropicBreakpoints(request: readonly Element[]): number[] {
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

function priceAnthropic(root: Node, { blocks: request, breakpoints: points }: CacheBlocks): RequestCost {
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
  if (model === "anthropic" || model === "anthropic-idle") return priceAnthropic(root, request.cache);
  const input = total(request.elements);
  const shared = sharedPrefix(root, request.elements);
  insert(root, request.elements);
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
  // Cut after the tools and the system prompt: `cut` elements, `cutBlocks` of Anthropic's blocks.
  let cut = 0;
  let cutBlocks = 0;
  let summary: Element | null = null;
  let compactions = 0;
  let last: Request | null = null;
  const out: Run[] = [];
  for (const run of runs) {
    const requests: Request[] = [];
    const first = run[0];
    if (first && last && total(last.elements) > options.thresholdTokens) {
      compactions++;
      const transcript = last.elements.slice(2).reduce((s, e) => s + e.tokens, 0);
      requests.push(
        requestOf([
          { text: "system:summarization", tokens: options.promptTokens, role: "system", blocks: 1 },
          { text: `compaction ${compactions}`, tokens: transcript, role: "user", blocks: 1 },
        ]),
      );
      cut = first.elements.length - 3; // every message before this run's prompt
      const blocks = first.cache.blocks;
      let prompt = blocks.length - 1; // the first block of the prompt's message
      while (prompt > 0 && blocks[prompt]!.continues) prompt--;
      cutBlocks = prompt - head(blocks);
      summary = { text: `summary ${compactions}`, tokens: options.summaryTokens, role: "user", blocks: 1 };
    }
    for (const request of run) {
      const kept = request.elements.slice(2 + cut);
      const elements = [request.elements[0]!, request.elements[1]!, ...(summary ? [summary] : []), ...kept];
      const { blocks, breakpoints } = request.cache;
      const h = head(blocks);
      const added = summary ? 1 : 0;
      requests.push({
        elements,
        cache: {
          blocks: [...blocks.slice(0, h), ...(summary ? [summary] : []), ...blocks.slice(h + cutBlocks)],
          breakpoints: breakpoints.flatMap((b) => (b <= h ? [b] : b > h + cutBlocks ? [b - cutBlocks + added] : [])),
        },
      });
    }
    last = requests.at(-1) ?? last;
    out.push(requests);
  }
  return { runs: out, compactions };
}

/** How many of Anthropic's blocks come before the messages (the tools, the system prompt's blocks). */
function head(blocks: readonly Element[]): number {
  let h = 0;
  while (h < blocks.length && (blocks[h]!.role === "tools" || blocks[h]!.role === "system")) h++;
  return h;
}

/** Per run, the tokens of messages no earlier request carried: what the run adds to the conversation. */
export function newTokens(runs: readonly Run[]): number[] {
  const seen = new Set<string>();
  return runs.map((run) => {
    let fresh = 0;
    for (const request of run)
      for (const e of request.elements.slice(2))
        if (!seen.has(e.text)) {
          seen.add(e.text);
          fresh += e.tokens;
        }
    return fresh;
  });
}
