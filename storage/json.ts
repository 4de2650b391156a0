// JSON values for State Flow: validation of untrusted input, canonical bytes and hashes,
// and the recursive patch rule every scope transition uses.
//
// Why hand-written: the rules are exact and few (objects merge, arrays and primitives replace,
// a nested null deletes a key, no null may remain in materialized state), and they must treat
// `__proto__` / `constructor` as plain data, which naive `obj[key] = value` code does not.

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
export function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

function hasOwn(target: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(target, key);
}

export interface JsonCheckOptions {
  /** Whether `null` may appear (patches use it to delete keys; materialized state never holds it). */
  allowNull: "never" | "object-members";
}

/**
 * Validates that `value` is finite, acyclic, plain JSON and returns a detached deep copy.
 * Throws `invalid-json` naming the path and what was found there.
 */
export function toJson(value: unknown, path: string, options: JsonCheckOptions): JsonValue {
  return copyChecked(value, path, options, new Set(), false);
}

function copyChecked(
  value: unknown,
  path: string,
  options: JsonCheckOptions,
  ancestors: Set<object>,
  insideObjectMember: boolean,
): JsonValue {
  if (value === null) {
    if (options.allowNull === "object-members" && insideObjectMember) return null;
    throw new StateFlowError(
      "invalid-json",
      options.allowNull === "never"
        ? "null is not allowed in materialized state"
        : "null is only allowed as an object member (it deletes that key); arrays and the top level cannot hold null",
      path || "(root)",
    );
  }
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) {
        throw new StateFlowError("invalid-json", `${describe(value)} is not a finite JSON number`, path || "(root)");
      }
      return Object.is(value, -0) ? 0 : value;
    case "object":
      break;
    default:
      throw new StateFlowError("invalid-json", `${describe(value)} is not a JSON value`, path || "(root)");
  }
  const obj = value as object;
  if (ancestors.has(obj)) throw new StateFlowError("invalid-json", "cyclic reference", path || "(root)");
  ancestors.add(obj);
  try {
    if (Array.isArray(obj)) {
      const out: JsonValue[] = [];
      for (let i = 0; i < obj.length; i++) {
        if (!hasOwn(obj, String(i))) {
          throw new StateFlowError("invalid-json", "sparse array hole is not a JSON value", childPath(path, i));
        }
        out.push(copyChecked(obj[i], childPath(path, i), options, ancestors, false));
      }
      return out;
    }
    if (!isPlainObject(obj)) {
      throw new StateFlowError("invalid-json", `${describe(obj)} is not a plain JSON object`, path || "(root)");
    }
    if (Object.getOwnPropertySymbols(obj).length > 0) {
      throw new StateFlowError("invalid-json", "symbol keys are not JSON", path || "(root)");
    }
    const out: JsonObject = {};
    for (const key of Object.keys(obj)) {
      const descriptor = Object.getOwnPropertyDescriptor(obj, key)!;
      if (!("value" in descriptor)) {
        throw new StateFlowError("invalid-json", "accessor properties are not JSON", childPath(path, key));
      }
      setOwn(out, key, copyChecked(descriptor.value, childPath(path, key), options, ancestors, true));
    }
    return out;
  } finally {
    ancestors.delete(obj);
  }
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

export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
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
export function diffJson(before: JsonValue | undefined, after: JsonValue): JsonValue | undefined {
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
