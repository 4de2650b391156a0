// The token model of `npm run bench` (bench/e2e.ts): every provider request the faux model receives
// is billed the way providers bill input — tools, then the system prompt, then the messages — with
// Pi's own estimator (estimateTokens, chars / 4 per message), and priced once without a cache and
// once with a prefix cache: the longest prefix this request shares with ANY earlier request of the
// same session is read from the cache at 0.1× (cache writes are billed at 1×, like uncached input).
//
// A request is a sequence of elements (tools JSON, system prompt, one element per message, each
// serialized as a provider sees it: no timestamps, usage or model ids). The shared prefix is found
// in a trie of earlier requests' elements; inside the first element that differs, the longest
// common character prefix with any earlier element at that position counts too (pro rata of that
// element's tokens). The longest common prefix of a string with a set of strings is reached at one
// of its two neighbours in sorted order, so each node keeps its children's keys sorted.

import { estimateTokens } from "@earendil-works/pi-coding-agent";
import type { Message, Tool } from "@earendil-works/pi-ai";
import { payloadBlocks, type AnthropicBlock, type AnthropicPayload } from "./anthropic-payload.ts";

export interface CapturedRequest {
  readonly systemPrompt: string | undefined;
  readonly tools: readonly Tool[];
  readonly messages: readonly Message[];
}

export interface BilledRequest {
  /** Input tokens of the whole request (tools + system prompt + messages). */
  readonly tokens: number;
  /** Of those, the tokens of the longest prefix shared with an earlier request. */
  readonly cached: number;
  /** Serialized request size in bytes (what a provider is sent, as UTF-8). */
  readonly bytes: number;
}

export const CACHE_READ_PRICE = 0.1;

/** Billed cost of a request in input-token units: no cache, and with the prefix cache. */
export function cost(request: BilledRequest): { uncached: number; cached: number } {
  return { uncached: request.tokens, cached: request.tokens - request.cached + CACHE_READ_PRICE * request.cached };
}

const textTokens = (text: string) =>
  estimateTokens({ role: "user", content: [{ type: "text", text }], timestamp: 0 } as never);

/** What a provider is sent of one message: its role and content, never Pi's bookkeeping. */
function providerView(message: Message): unknown {
  const m = message as unknown as Record<string, unknown>;
  if (m.role === "toolResult") {
    return { role: m.role, toolCallId: m.toolCallId, toolName: m.toolName, isError: m.isError, content: m.content };
  }
  if (m.role === "assistant") {
    const content = (m.content as Record<string, unknown>[]).map((block) =>
      block.type === "toolCall"
        ? { type: "toolCall", id: block.id, name: block.name, arguments: block.arguments }
        : block.type === "text"
          ? { type: "text", text: block.text }
          : block,
    );
    return { role: m.role, content };
  }
  return { role: m.role, content: m.content };
}

/** One part of a request as a provider sees it: the tools, the system prompt, or one message. */
export interface Element {
  readonly text: string;
  readonly tokens: number;
  /** "tools", "system", or the message's role (user, assistant, toolResult). */
  readonly role: string;
  /** Content blocks (tool definitions; a message's content parts): the unit of Anthropic's cache lookback. */
  readonly blocks: number;
  /** One block of Anthropic's payload that is not the first of its message (see `PrefixCache.anthropic`). */
  readonly continues?: true;
}

/** Anthropic's view of one request: its content blocks in cache order, and where cache_control is. */
export interface CacheBlocks {
  readonly blocks: readonly Element[];
  /** Prefix lengths (in blocks) ending at a block that carries cache_control, ascending. */
  readonly breakpoints: readonly number[];
}

const message = (role: string, content: unknown) => ({ role, content, timestamp: 0 }) as never;

/** A payload block's tokens with Pi's estimator, counted the way it counts the message part it came from. */
function blockTokens(role: string, block: AnthropicBlock, json: string): number {
  if (role === "tools") return textTokens(json);
  switch (block.type) {
    case "text":
      return estimateTokens(message("user", [{ type: "text", text: block.text }]));
    case "image":
      return estimateTokens(message("user", [{ type: "image" }]));
    case "thinking":
      return estimateTokens(message("assistant", [{ type: "thinking", thinking: block.thinking }]));
    case "tool_use":
      return estimateTokens(message("assistant", [{ type: "toolCall", name: block.name, arguments: block.input }]));
    case "tool_result":
      return estimateTokens(message("toolResult", block.content));
    default:
      return textTokens(json);
  }
}

interface TrieNode {
  readonly children: Map<string, TrieNode>;
  /** The children's keys in sorted order (for the partial match of a differing element). */
  readonly sorted: string[];
}

const newNode = (): TrieNode => ({ children: new Map(), sorted: [] });

export function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  // Compare in chunks first: long shared prefixes (a 128 KiB state) are the common case.
  for (const step of [4096, 512, 64, 8, 1])
    while (i + step <= n && a.startsWith(b.substring(i, i + step), i)) i += step;
  return i;
}

export function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One session's prefix cache: bill() prices a request against every request billed before it. */
export class PrefixCache {
  private readonly root = newNode();
  // Pi hands the same message objects to consecutive requests: serialize each once.
  private readonly serialized = new WeakMap<object, Element>();
  // One element per distinct text, so a session's requests kept for pricing share their parts.
  private readonly interned = new Map<string, Element>();

  // Anthropic's payload blocks, one per distinct block (with its role and message boundary).
  private readonly internedBlocks = new Map<string, Element>();

  private intern(element: Element): Element {
    const known = this.interned.get(element.text);
    if (known) return known;
    this.interned.set(element.text, element);
    return element;
  }

  private element(message: Message): Element {
    const known = this.serialized.get(message);
    if (known) return known;
    const content = (message as { content?: unknown }).content;
    const element = this.intern({
      text: JSON.stringify(providerView(message)),
      tokens: estimateTokens(message as never),
      role: message.role,
      blocks: message.role === "toolResult" || !Array.isArray(content) ? 1 : Math.max(1, content.length),
    });
    this.serialized.set(message, element);
    return element;
  }

  elements(request: CapturedRequest): Element[] {
    const tools = JSON.stringify(
      request.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
    );
    const system = request.systemPrompt ?? "";
    return [
      this.intern({ text: `tools:${tools}`, tokens: textTokens(tools), role: "tools", blocks: request.tools.length }),
      this.intern({
        text: `system:${system}`,
        tokens: textTokens(system),
        role: "system",
        blocks: system === "" ? 0 : 1,
      }),
      ...request.messages.map((m) => this.element(m)),
    ];
  }

  /**
   * A payload Pi's Anthropic provider built (bench/anthropic-payload.ts) as the anthropic price
   * models read it: one element per content block, its text the block without its cache_control
   * (with its role, and whether it opens its message), its tokens Pi's estimate of that part.
   */
  anthropic(payload: AnthropicPayload): CacheBlocks {
    const blocks: Element[] = [];
    const breakpoints: number[] = [];
    for (const { role, block, opens } of payloadBlocks(payload)) {
      const { cache_control, ...content } = block;
      const json = JSON.stringify(content);
      const text = `${role}${opens ? "^" : "+"}${json}`;
      let element = this.internedBlocks.get(text);
      if (!element) {
        element = {
          text,
          tokens: blockTokens(role, block, json),
          role,
          blocks: 1,
          ...(opens ? {} : { continues: true }),
        };
        this.internedBlocks.set(text, element);
      }
      blocks.push(element);
      if (cache_control) breakpoints.push(blocks.length);
    }
    return { blocks, breakpoints };
  }

  bill(request: CapturedRequest): BilledRequest {
    const elements = this.elements(request);
    let node: TrieNode | undefined = this.root;
    let cached = 0;
    for (const element of elements) {
      const next: TrieNode | undefined = node.children.get(element.text);
      if (next) {
        cached += element.tokens;
        node = next;
        continue;
      }
      const at = lowerBound(node.sorted, element.text);
      const shared = Math.max(
        at > 0 ? commonPrefix(node.sorted[at - 1]!, element.text) : 0,
        at < node.sorted.length ? commonPrefix(node.sorted[at]!, element.text) : 0,
      );
      cached += Math.floor((element.tokens * shared) / Math.max(1, element.text.length));
      break;
    }
    this.insert(elements);
    const tokens = elements.reduce((sum, e) => sum + e.tokens, 0);
    const bytes = elements.reduce((sum, e) => sum + Buffer.byteLength(e.text), 0);
    return { tokens, cached, bytes };
  }

  private insert(elements: readonly Element[]): void {
    let node = this.root;
    for (const element of elements) {
      let next = node.children.get(element.text);
      if (!next) {
        next = newNode();
        node.children.set(element.text, next);
        node.sorted.splice(lowerBound(node.sorted, element.text), 0, element.text);
      }
      node = next;
    }
  }
}
