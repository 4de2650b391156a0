// What a person is shown of a state (/state-flow-show) and of the difference between two boundaries
// (/state-flow-diff): a readable tree instead of one JSON block, with key counts and sizes, and every
// long value folded to one line whose hint is the exact command that shows it whole. Pure text:
// the boundaries are read elsewhere (runtime/inspect.ts); nothing here reads a store.
//
// Paths are dotted (`working.plan`, `artifacts./k/a.md.body`): a key may itself hold dots (an
// artifact is keyed by its source path), so a path resolves greedily, the longest key first.

import { canonicalJson, isJsonObject, type JsonObject, type JsonValue } from "../storage/core/json.ts";

/** A value whose one-line JSON is longer than this is folded, with the command that shows it whole. */
export const INLINE_LIMIT = 200;
/** Objects and arrays this deep below a top-level field are folded (the hint shows them). */
export const FOLD_DEPTH = 3;
/** An object or array lists at most this many members; the rest are counted with the hint. */
export const MAX_MEMBERS = 40;
/** How much of a folded string its line keeps. */
const PREVIEW = 80;

/** The command that shows the value at `path` whole (a dotted path; "" for the whole state). */
export type ShowHint = (path: string) => string;

export const count = (n: number): string => n.toLocaleString("en-US");

export function dotted(path: readonly string[]): string {
  return path.join(".");
}

/** The size of a value as its one-line JSON, the measure a person can compare. */
function chars(value: JsonValue): number {
  return typeof value === "string" ? value.length : JSON.stringify(value).length;
}

function shape(value: JsonValue): string {
  if (Array.isArray(value)) return `[${count(value.length)} item${value.length === 1 ? "" : "s"}`;
  if (isJsonObject(value)) {
    const keys = Object.keys(value).length;
    return `{${count(keys)} key${keys === 1 ? "" : "s"}`;
  }
  return "";
}

function closeShape(value: JsonValue): string {
  return Array.isArray(value) ? "]" : "}";
}

/** One line for a value: its JSON when short, else a fold with its size and the command that shows it. */
export function inlineValue(value: JsonValue, path: readonly string[], hint: ShowHint): string {
  const json = JSON.stringify(value);
  if (json.length <= INLINE_LIMIT) return json;
  const more = `${count(chars(value))} chars — ${hint(dotted(path))} shows it whole`;
  if (typeof value === "string") return `${JSON.stringify(value.slice(0, PREVIEW))}… ${more}`;
  return `${shape(value)}${closeShape(value)} … ${more}`;
}

function members(value: JsonObject | JsonValue[]): [string, JsonValue][] {
  return Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
}

/** The tree lines of one member: short values inline, objects and arrays opened up to FOLD_DEPTH. */
function entryLines(key: string, value: JsonValue, path: string[], depth: number, hint: ShowHint): string[] {
  const indent = "  ".repeat(depth);
  const label = /^\d+$/.test(key) && path.length > 0 ? `[${key}]` : key;
  const container = Array.isArray(value) || isJsonObject(value);
  if (!container || JSON.stringify(value).length <= INLINE_LIMIT || depth >= FOLD_DEPTH) {
    return [`${indent}${label}: ${inlineValue(value, path, hint)}`];
  }
  const lines = [`${indent}${label}: ${shape(value)}, ${count(chars(value))} chars${closeShape(value)}`];
  lines.push(...childLines(value as JsonObject | JsonValue[], path, depth + 1, hint));
  return lines;
}

function childLines(value: JsonObject | JsonValue[], path: string[], depth: number, hint: ShowHint): string[] {
  const all = members(value);
  const lines = all
    .slice(0, MAX_MEMBERS)
    .flatMap(([key, child]) => entryLines(key, child, [...path, key], depth, hint));
  if (all.length > MAX_MEMBERS) {
    const path0 = dotted(path);
    lines.push(`${"  ".repeat(depth)}… ${count(all.length - MAX_MEMBERS)} more — ${hint(path0)} shows them all`);
  }
  return lines;
}

/** A state as a tree: each top-level field with its key count and size, then its members. */
export function stateTree(state: JsonObject, hint: ShowHint): string[] {
  const lines: string[] = [];
  for (const [field, value] of Object.entries(state)) {
    if (typeof value === "string") {
      lines.push(`${field} — ${count(value.length)} chars`);
      if (value.length > 0) lines.push(`  ${inlineValue(value, [field], hint)}`);
    } else if (Array.isArray(value) || isJsonObject(value)) {
      const n = members(value).length;
      lines.push(
        `${field} — ${count(n)} ${Array.isArray(value) ? "item" : "key"}${n === 1 ? "" : "s"}, ` +
          `${count(chars(value))} chars`,
      );
      lines.push(...childLines(value, [field], 1, hint));
    } else {
      lines.push(`${field}: ${JSON.stringify(value)}`);
    }
  }
  return lines;
}

/** A value shown whole: a string as its text (prose reads better unescaped), anything else as indented JSON. */
export function wholeValue(value: JsonValue): string {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export type PathLookup =
  | { found: true; value: JsonValue; path: string[] }
  /** `at`: the deepest path that exists; `available`: its members (what the person can ask for instead). */
  | { found: false; at: string[]; available: string[] };

/** Resolves a dotted path; at each level the longest member whose name the path continues with wins. */
export function lookupPath(root: JsonValue, path: string): PathLookup {
  let value = root;
  const at: string[] = [];
  let rest = path;
  while (rest.length > 0) {
    const container = Array.isArray(value) || isJsonObject(value) ? members(value as JsonObject) : [];
    const keys = container.map(([key]) => key).sort((a, b) => b.length - a.length);
    const key = keys.find((k) => rest === k || rest.startsWith(`${k}.`));
    if (key === undefined) return { found: false, at, available: container.map(([k]) => k) };
    value = container.find(([k]) => k === key)![1];
    at.push(key);
    rest = rest.slice(key.length + 1);
  }
  return { found: true, value, path: at };
}

// ---- structural difference ----------------------------------------------------------------------

export interface DiffEntry {
  kind: "added" | "changed" | "removed";
  path: string[];
  before?: JsonValue;
  after?: JsonValue;
}

/**
 * The paths where two values differ: objects are compared member by member, anything else
 * (arrays included: an item's index is no identity) as one value. Key order is not a difference.
 */
export function diffValues(before: JsonValue, after: JsonValue, path: string[] = []): DiffEntry[] {
  if (isJsonObject(before) && isJsonObject(after)) {
    const entries: DiffEntry[] = [];
    for (const key of Object.keys(before)) {
      if (!Object.prototype.hasOwnProperty.call(after, key))
        entries.push({ kind: "removed", path: [...path, key], before: before[key]! });
      else entries.push(...diffValues(before[key]!, after[key]!, [...path, key]));
    }
    for (const key of Object.keys(after)) {
      if (!Object.prototype.hasOwnProperty.call(before, key))
        entries.push({ kind: "added", path: [...path, key], after: after[key]! });
    }
    return entries;
  }
  return canonicalJson(before) === canonicalJson(after) ? [] : [{ kind: "changed", path, before, after }];
}

/** The diff as lines, grouped added/changed/removed; values folded with hints to the side they are from. */
export function diffLines(entries: readonly DiffEntry[], hintBefore: ShowHint, hintAfter: ShowHint): string[] {
  if (entries.length === 0) return ["no difference: both boundaries hold the same state in this scope"];
  const lines: string[] = [];
  for (const kind of ["added", "changed", "removed"] as const) {
    const of = entries.filter((e) => e.kind === kind);
    if (of.length === 0) continue;
    lines.push(`${kind} (${of.length}):`);
    for (const e of of) {
      const where = dotted(e.path);
      if (kind === "added") lines.push(`  + ${where}: ${inlineValue(e.after!, e.path, hintAfter)}`);
      else if (kind === "removed") lines.push(`  - ${where}: ${inlineValue(e.before!, e.path, hintBefore)}`);
      else {
        const a = inlineValue(e.before!, e.path, hintBefore);
        const b = inlineValue(e.after!, e.path, hintAfter);
        if (a.length + b.length <= INLINE_LIMIT) lines.push(`  ~ ${where}: ${a} → ${b}`);
        else lines.push(`  ~ ${where}:`, `      was: ${a}`, `      now: ${b}`);
      }
    }
  }
  return lines;
}

/**
 * The changed keys two levels deep (`working.plan`), each once, like the model's recent-transition
 * summary: a change deeper down is a change of its two-level key, which exists on both sides.
 */
export function twoLevelSummary(entries: readonly DiffEntry[]): Record<DiffEntry["kind"], string[]> {
  const out = { added: new Set<string>(), changed: new Set<string>(), removed: new Set<string>() };
  for (const e of entries) out[e.path.length > 2 ? "changed" : e.kind].add(dotted(e.path.slice(0, 2)));
  return { added: [...out.added], changed: [...out.changed], removed: [...out.removed] };
}
