import { describe, expect, it } from "vitest";
import { rejection } from "../support/rejection.ts";
import {
  applyJsonPatch,
  canonicalJson,
  cloneJson,
  diffJson,
  hashJson,
  jsonEqual,
  overlayJson,
  toJson,
  type JsonValue,
} from "../../storage/json.ts";

const never = { allowNull: "never" } as const;
const members = { allowNull: "object-members" } as const;


describe("toJson", () => {
  it("names the path of a null inside an array in materialized state", () => {
    const error = rejection(() => toJson({ working: { items: [1, 2, 3, null] } }, "session", never));
    expect(error.message).toBe("session.working.items[3]: null is not allowed in materialized state");
    expect(error.code).toBe("invalid-json");
  });

  it("allows null only as an object member in patches", () => {
    expect(toJson({ a: null }, "p", members)).toEqual({ a: null });
    expect(rejection(() => toJson({ a: [null] }, "p", members)).message).toMatch(/^p\.a\[0\]: null is only allowed as an object member/);
  });

  it.each([
    ["NaN", { n: Number.NaN }, "x.n: NaN is not a finite JSON number"],
    ["Infinity", { n: Number.POSITIVE_INFINITY }, "x.n: Infinity is not a finite JSON number"],
    ["function", { f: () => 1 }, "x.f: a function is not a JSON value"],
    ["undefined", { u: undefined }, "x.u: undefined is not a JSON value"],
    ["bigint", { b: 1n }, "x.b: a bigint is not a JSON value"],
    ["Date", { d: new Date(0) }, "x.d: a Date object is not a plain JSON object"],
    ["Map", { m: new Map() }, "x.m: a Map object is not a plain JSON object"],
    ["class instance", { c: new (class Thing {})() }, "x.c: a Thing object is not a plain JSON object"],
    ["sparse array", { s: [1, , 3] }, "x.s[1]: sparse array hole is not a JSON value"],
  ])("rejects %s with its path", (_name, value, message) => {
    expect(rejection(() => toJson(value, "x", never)).message).toBe(message);
  });

  it("rejects cycles", () => {
    const cyclic: Record<string, unknown> = { a: {} };
    (cyclic.a as Record<string, unknown>).back = cyclic;
    expect(rejection(() => toJson(cyclic, "x", never)).message).toBe("x.a.back: cyclic reference");
  });

  it("accepts shared (non-cyclic) references and detaches the copy", () => {
    const shared = { v: 1 };
    const input = { a: shared, b: shared };
    const copy = toJson(input, "x", never) as Record<string, Record<string, number>>;
    shared.v = 2;
    expect(copy).toEqual({ a: { v: 1 }, b: { v: 1 } });
  });

  it("treats __proto__ and constructor as plain data", () => {
    const input = JSON.parse('{"__proto__":{"polluted":true},"constructor":{"name":"x"}}');
    const copy = toJson(input, "x", never) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(["__proto__", "constructor"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(canonicalJson(copy as JsonValue)).toBe('{"__proto__":{"polluted":true},"constructor":{"name":"x"}}');
  });

  it("normalizes -0 to 0", () => {
    expect(canonicalJson(toJson({ z: -0 }, "x", never))).toBe('{"z":0}');
  });
});

describe("canonical serialization and hashing", () => {
  it("is independent of key order", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 1, x: 2 }], c: "s" } })).toBe('{"a":{"c":"s","d":[1,{"x":2,"y":1}]},"b":1}');
    expect(hashJson({ a: 1, b: 2 })).toBe(hashJson({ b: 2, a: 1 }));
    expect(hashJson({ a: 1 })).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(hashJson({ a: 1 })).not.toBe(hashJson({ a: 2 }));
  });
});

describe("applyJsonPatch", () => {
  it("merges objects, replaces arrays and primitives, deletes on null", () => {
    const base = { keep: 1, obj: { a: 1, b: 2 }, list: [1, 2, 3], s: "x" } as JsonValue;
    const patch = { obj: { b: null, c: 3 }, list: [9], s: { now: "object" }, gone: null } as JsonValue;
    const baseCopy = cloneJson(base);
    const patchCopy = cloneJson(patch);
    expect(applyJsonPatch(base, patch)).toEqual({ keep: 1, obj: { a: 1, c: 3 }, list: [9], s: { now: "object" } });
    expect(base).toEqual(baseCopy);
    expect(patch).toEqual(patchCopy);
  });

  it("drops deletions aimed below a non-object value", () => {
    expect(applyJsonPatch({ a: 1 }, { a: { x: null, y: 2 } })).toEqual({ a: { y: 2 } });
  });

  it("never lets a later patch mutation reach the result", () => {
    const patch = { list: [1, 2] } as { list: number[] };
    const result = applyJsonPatch({}, patch) as { list: number[] };
    patch.list.push(3);
    expect(result.list).toEqual([1, 2]);
  });

  it("deletes and sets __proto__ as an own key", () => {
    const withProto = applyJsonPatch({}, JSON.parse('{"__proto__":{"x":1}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(withProto)).toBe(Object.prototype);
    expect(Object.keys(withProto)).toEqual(["__proto__"]);
    expect(Object.keys(applyJsonPatch(withProto as JsonValue, JSON.parse('{"__proto__":null}')) as object)).toEqual([]);
  });
});

describe("diffJson", () => {
  it("returns the minimal patch that reproduces the target", () => {
    const before = { a: 1, b: { c: [1], d: "x" }, e: true } as JsonValue;
    const after = { a: 1, b: { c: [1, 2] }, f: { g: 1 } } as JsonValue;
    const patch = diffJson(before, after)!;
    expect(patch).toEqual({ b: { c: [1, 2], d: null }, e: null, f: { g: 1 } });
    expect(applyJsonPatch(before, patch)).toEqual(after);
  });

  it("is undefined for equal values", () => {
    expect(diffJson({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBeUndefined();
  });
});

describe("overlayJson and jsonEqual", () => {
  it("upper wins, absent keys reveal lower, arrays replace", () => {
    expect(overlayJson({ a: 1, n: { x: 1, y: 1 }, l: [1, 2] }, { n: { y: 2 }, l: [3] })).toEqual({ a: 1, n: { x: 1, y: 2 }, l: [3] });
  });

  it("compares deeply", () => {
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(jsonEqual({ a: [1] }, { a: { 0: 1 } })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });
});
