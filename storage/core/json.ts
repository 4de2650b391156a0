// JSON values for State Flow: validation of untrusted input, canonical bytes and hashes,
// and the recursive patch rule every scope transition uses.
//
// Why hand-written: the rules are exact and few (objects merge, arrays and primitives replace,
// a null member of a merging object deletes its key, no null may remain in materialized state),
// and they must treat `__proto__` / `constructor` as plain data, which naive `obj[key] = value`
// code does not. Patch and state share one walker, so what a patch may store is by construction
// what materialized state (and the codec reading it back) accepts.

import { createHash } from "node:crypto";
import { StateFlowError, childPath } from "./errors.ts";

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "function") return "a function";
  if (typeof value === "symbol") return "a symbol";
  if (typeof value === "bigint") return "a bigint";
  if (typeof value === "number") return String(value);
  if (typeof value === "object" && value !== null) {
    const ctor = (value as { constructor?: { name?: string } }).constructor?.name;
    return ctor ? `a ${ctor} object` : "a non-plain object";
  }
  return typeof value;
}

/** Defines an own enumerable data property, so keys such as `__proto__` stay plain data. */
function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

function hasOwn(target: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(target, key);
}

/**
 * Objects and arrays nested deeper than this are refused, so every recursive walk over state
 * (merge, diff, hash, serialization, the next runtime's parse) stays far from the stack limit.
 */
export const MAX_JSON_DEPTH = 128;

export interface JsonCheckOptions {
  /**
   * Where `null` may appear. Materialized state never holds it. A patch may hold it only as a
   * member of an object in merge position (reached from the patch root through objects only),
   * where it deletes that key. Everything inside an array is a replacement value, stored as is,
   * so it is checked exactly like materialized state.
   */
  allowNull: "never" | "merge-members";
}

/** What a value is at its place in the walk; it decides whether `null` may stand there. */
type Position = "materialized" | "patch-root" | "merge-member" | "replacement";

interface Walk {
  /** Build a detached copy (untrusted input), or only check and return the value itself. */
  copy: boolean;
  ancestors: Set<object>;
}

/**
 * Validates that `value` is finite, acyclic, plain JSON no deeper than `MAX_JSON_DEPTH` and returns a
 * detached deep copy (`-0` becomes `0`). Throws `invalid-json` naming the path and what was wrong there.
 */
export function toJson(value: unknown, path: string, options: JsonCheckOptions): JsonValue {
  return walk(value, undefined, path, rootPosition(options), 1, { copy: true, ancestors: new Set() });
}

/**
 * The same rule as `toJson` without copying. Subtrees that are `known` at the same path (by
 * reference) are skipped: `known` must itself have passed this check, so a freshly patched state
 * costs only its changed paths.
 */
export function assertJson(value: JsonValue, path: string, options: JsonCheckOptions, known?: JsonValue): void {
  walk(value, known, path, rootPosition(options), 1, { copy: false, ancestors: new Set() });
}

function rootPosition(options: JsonCheckOptions): Position {
  return options.allowNull === "never" ? "materialized" : "patch-root";
}

function memberPosition(parent: Position): Position {
  return parent === "materialized" || parent === "replacement" ? parent : "merge-member";
}

function itemPosition(parent: Position): Position {
  return parent === "materialized" ? parent : "replacement";
}

const NULL_REFUSALS: Record<Exclude<Position, "merge-member">, string> = {
  materialized: "null is not allowed in materialized state",
  "patch-root": "a patch is an object; null only deletes a key as one of its members",
  replacement:
    "null inside an array cannot be stored: an array replaces the stored value whole, objects in it included " +
    "(nothing in it merges, so null deletes nothing there), and state never holds null. Send the complete " +
    'array without it: leave that item or key out, or use another value such as "" or false',
};

function walk(
  value: unknown,
  known: JsonValue | undefined,
  path: string,
  position: Position,
  depth: number,
  state: Walk,
): JsonValue {
  const where = path || "(root)";
  if (value === null) {
    if (position === "merge-member") return null;
    throw new StateFlowError("invalid-json", NULL_REFUSALS[position], where);
  }
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) {
        throw new StateFlowError("invalid-json", `${describe(value)} is not a finite JSON number`, where);
      }
      return state.copy && Object.is(value, -0) ? 0 : value;
    case "object":
      break;
    default:
      throw new StateFlowError("invalid-json", `${describe(value)} is not a JSON value`, where);
  }
  const obj = value as object;
  if (state.ancestors.has(obj)) throw new StateFlowError("invalid-json", "cyclic reference", where);
  if (depth > MAX_JSON_DEPTH) {
    throw new StateFlowError(
      "invalid-json",
      `objects and arrays nest more than ${MAX_JSON_DEPTH} levels deep here; flatten the structure`,
      where,
    );
  }
  state.ancestors.add(obj);
  try {
    return Array.isArray(obj)
      ? walkArray(obj, path, itemPosition(position), depth, state)
      : walkObject(obj, known, path, memberPosition(position), depth, state);
  } finally {
    state.ancestors.delete(obj);
  }
}

function walkArray(items: unknown[], path: string, position: Position, depth: number, state: Walk): JsonValue {
  const out: JsonValue[] = [];
  for (let i = 0; i < items.length; i++) {
    if (!hasOwn(items, String(i))) {
      throw new StateFlowError("invalid-json", "sparse array hole is not a JSON value", childPath(path, i));
    }
    const item = walk(items[i], undefined, childPath(path, i), position, depth + 1, state);
    if (state.copy) out.push(item);
  }
  return state.copy ? out : (items as JsonValue[]);
}

function walkObject(
  obj: object,
  known: JsonValue | undefined,
  path: string,
  position: Position,
  depth: number,
  state: Walk,
): JsonValue {
  if (!isPlainObject(obj)) {
    throw new StateFlowError("invalid-json", `${describe(obj)} is not a plain JSON object`, path || "(root)");
  }
  if (Object.getOwnPropertySymbols(obj).length > 0) {
    throw new StateFlowError("invalid-json", "symbol keys are not JSON", path || "(root)");
  }
  const prior = isJsonObject(known) ? known : undefined;
  const out: JsonObject = {};
  for (const key of Object.keys(obj)) {
    const before = prior && hasOwn(prior, key) ? prior[key] : undefined;
    // Identity first: a member shared with `known` was checked with it, and most members of a
    // patched object are shared, so they cost no descriptor.
    if (before !== undefined && before === (obj as JsonObject)[key]) continue;
    const descriptor = Object.getOwnPropertyDescriptor(obj, key)!;
    if (!("value" in descriptor)) {
      throw new StateFlowError("invalid-json", "accessor properties are not JSON", childPath(path, key));
    }
    const checked = walk(descriptor.value, before, childPath(path, key), position, depth + 1, state);
    if (state.copy) setOwn(out, key, checked);
  }
  return state.copy ? out : (obj as JsonObject);
}

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Canonical serialization: object keys sorted by code unit, no whitespace. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(",")}}`;
}

/** Returns a copy whose objects have sorted keys, for deterministic pretty printing. */
export function sortKeysDeep(value: JsonValue): JsonValue {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  const out: JsonObject = {};
  for (const key of Object.keys(value).sort()) setOwn(out, key, sortKeysDeep(value[key]!));
  return out;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Semantic hash: `sha256:<64 hex>` over the canonical serialization. */
export function hashJson(value: JsonValue): string {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}

function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as JsonValue[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]!));
  }
  const ao = a as JsonObject;
  const bo = b as JsonObject;
  const ak = Object.keys(ao);
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every((k) => hasOwn(bo, k) && jsonEqual(ao[k]!, bo[k]!));
}

/** Deep copy of an already-validated JSON value (callers get detached results). */
export function cloneJson<T extends JsonValue>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  const out: JsonObject = {};
  for (const key of Object.keys(value)) setOwn(out, key, cloneJson((value as JsonObject)[key]!));
  return out as T;
}

/**
 * Applies a validated patch to a validated base without touching either.
 * Objects merge recursively, arrays and primitives replace, a `null` member deletes its key.
 * Unchanged subtrees of `base` are shared (values are never mutated after validation).
 */
export function applyJsonPatch(base: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return cloneJson(patch);
  const source = isJsonObject(base) ? base : {};
  const out: JsonObject = {};
  for (const key of Object.keys(source)) setOwn(out, key, source[key]!);
  for (const key of Object.keys(patch)) {
    const change = patch[key]!;
    if (change === null) {
      delete out[key];
    } else {
      setOwn(out, key, applyJsonPatch(hasOwn(out, key) ? out[key] : undefined, change));
    }
  }
  return out;
}

/**
 * Recursive overlay of materialized objects: `upper` wins, absent keys reveal `lower`.
 * Used for the effective state (global → cwd → session).
 */
export function overlayJson(lower: JsonValue | undefined, upper: JsonValue | undefined): JsonValue | undefined {
  if (upper === undefined) return lower;
  if (!isJsonObject(upper) || !isJsonObject(lower)) return upper;
  const out: JsonObject = {};
  for (const key of Object.keys(lower)) setOwn(out, key, lower[key]!);
  for (const key of Object.keys(upper)) {
    setOwn(out, key, overlayJson(hasOwn(out, key) ? out[key] : undefined, upper[key])!);
  }
  return out;
}

/**
 * The minimal patch that turns `before` into `after` under `applyJsonPatch`, or `undefined` when
 * they are equal. Shared subtrees are skipped by reference, so diffing a freshly patched state
 * against its base costs only the changed paths. Used to record effective patches (no no-op
 * members) and to detect materially no-op transitions.
 */
function diffJson(before: JsonValue | undefined, after: JsonValue): JsonValue | undefined {
  if (before === after) return undefined;
  if (isJsonObject(before) && isJsonObject(after)) {
    const out: JsonObject = {};
    let changed = false;
    for (const key of Object.keys(before)) {
      if (!hasOwn(after, key)) {
        setOwn(out, key, null);
        changed = true;
      }
    }
    for (const key of Object.keys(after)) {
      const d = diffJson(hasOwn(before, key) ? before[key] : undefined, after[key]!);
      if (d !== undefined) {
        setOwn(out, key, d);
        changed = true;
      }
    }
    return changed ? out : undefined;
  }
  if (before !== undefined && jsonEqual(before, after)) return undefined;
  return cloneJson(after);
}

/** `diffJson` for two objects; `undefined` when equal. */
export function diffFields(before: JsonObject, after: JsonObject): JsonObject | undefined {
  return diffJson(before, after) as JsonObject | undefined;
}

/**
 * A state object as the model is shown it (the runtime context; /state-flow-status counts the same
 * text): one line per top-level key, everything inside it on that line, items joined by ", " and
 * keys by ": ". Indented JSON spends a line break and its indentation on every nested entry, about
 * two of Pi's estimated tokens each, and the runtime context re-sends them with every request
 * (issue 27); a key per line still shows the shape at a glance. It parses as JSON.
 */
export function stateJson(value: Readonly<Record<string, unknown>>): string {
  const inline = (item: unknown): string => {
    if (Array.isArray(item)) return `[${item.map(inline).join(", ")}]`;
    if (typeof item === "object" && item !== null)
      return `{${Object.entries(item)
        .map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`)
        .join(", ")}}`;
    return JSON.stringify(item);
  };
  const lines = Object.entries(value).map(([k, v]) => `  ${JSON.stringify(k)}: ${inline(v)}`);
  return lines.length === 0 ? "{}" : `{\n${lines.join(",\n")}\n}`;
}
