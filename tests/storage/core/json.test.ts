import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import {
  MAX_JSON_DEPTH,
  applyJsonPatch,
  assertJson,
  canonicalJson,
  cloneJson,
  diffFields,
  hashJson,
  overlayJson,
  stateJson,
  toJson,
  type JsonObject,
  type JsonValue,
} from "../../../storage/core/json.ts";

const never = { allowNull: "never" } as const;
const members = { allowNull: "merge-members" } as const;

describe("toJson", () => {
  it("names the path of a null inside an array in materialized state", () => {
    const error = rejection(() => toJson({ working: { items: [1, 2, 3, null] } }, "session", never));
    expect(error.message).toBe("session.working.items[3]: null is not allowed in materialized state");
    expect(error.code).toBe("invalid-json");
  });

  it("allows null only as a member of an object in merge position in patches", () => {
    expect(toJson({ a: null, b: { c: { d: null } } }, "p", members)).toEqual({ a: null, b: { c: { d: null } } });
    expect(rejection(() => toJson({ a: [null] }, "p", members)).message).toMatch(/^p\.a\[0\]: null inside an array/);
    expect(rejection(() => toJson(null, "p", members)).message).toBe(
      "p: a patch is an object; null only deletes a key as one of its members",
    );
  });

  it("refuses null inside an object inside an array, naming the exact path and what to do", () => {
    const error = rejection(() => toJson({ contract: { deep: [{ a: null }] } }, "session", members));
    expect(error.code).toBe("invalid-json");
    expect(error.path).toBe("session.contract.deep[0].a");
    expect(error.message).toBe(
      "session.contract.deep[0].a: null inside an array cannot be stored: an array replaces the stored value " +
        "whole, objects in it included (nothing in it merges, so null deletes nothing there), and state never " +
        'holds null. Send the complete array without it: leave that item or key out, or use another value such as "" ' +
        "or false",
    );
  });

  it.each([
    [{ l: [[null]] }, "p.l[0][0]"],
    [{ l: [{ a: { b: [1, { c: null }] } }] }, "p.l[0].a.b[1].c"],
    [{ o: { l: [[{ x: [{ y: null }] }]] } }, "p.o.l[0][0].x[0].y"],
  ])("refuses null at any depth below an array (%j)", (value, path) => {
    const error = rejection(() => toJson(value, "p", members));
    expect(error.path).toBe(path);
    expect(error.message).toMatch(/null inside an array cannot be stored/);
  });

  it(`refuses objects and arrays nested more than ${MAX_JSON_DEPTH} levels, in patches and in state`, () => {
    const nest = (levels: number): unknown => {
      let value: unknown = "leaf";
      for (let i = 1; i < levels; i++) value = i % 2 ? { k: value } : [value];
      return levels % 2 ? { k: value } : [value];
    };
    expect(() => toJson(nest(MAX_JSON_DEPTH), "p", members)).not.toThrow();
    for (const options of [members, never]) {
      const error = rejection(() => toJson(nest(MAX_JSON_DEPTH + 1), "p", options));
      expect(error.code).toBe("invalid-json");
      const refusal = `nest more than ${MAX_JSON_DEPTH} levels deep here; flatten the structure`;
      expect(error.message.endsWith(refusal)).toBe(true);
    }
    expect(rejection(() => toJson(nest(10_000), "p", members)).code).toBe("invalid-json");
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

  it("normalizes -0 to 0, also inside arrays", () => {
    expect(canonicalJson(toJson({ z: -0, l: [-0] }, "x", members))).toBe('{"l":[0],"z":0}');
    expect(Object.is((toJson({ l: [-0] }, "x", members) as { l: number[] }).l[0], 0)).toBe(true);
  });

  it("keeps lone surrogates, which canonical JSON escapes so the bytes stay valid UTF-8", () => {
    const value = toJson({ "\ud800": "a\udfffb" }, "x", never);
    expect(canonicalJson(value)).toBe('{"\\ud800":"a\\udfffb"}');
    expect(JSON.parse(canonicalJson(value))).toEqual(value);
  });
});

describe("assertJson", () => {
  it("applies the toJson rule without copying", () => {
    expect(() => assertJson({ a: [1, { b: "x" }] }, "s", never)).not.toThrow();
    const withNull = { a: [{ b: null }] } as JsonValue;
    expect(rejection(() => assertJson(withNull, "s", never)).message).toBe(
      "s.a[0].b: null is not allowed in materialized state",
    );
    const nan = rejection(() => assertJson({ n: Number.NaN }, "s", never));
    expect(nan.message).toBe("s.n: NaN is not a finite JSON number");
  });

  it("skips subtrees shared with an already checked value and checks the rest", () => {
    // `known` is trusted: its subtrees were checked when it was, so sharing them costs nothing.
    const shared = { list: [null] } as unknown as JsonValue;
    const known = { keep: shared } as JsonValue;
    expect(() => assertJson({ keep: shared, fresh: [1] }, "s", never, known)).not.toThrow();
    const fresh = { keep: shared, fresh: [null] } as unknown as JsonValue;
    expect(rejection(() => assertJson(fresh, "s", never, known)).path).toBe("s.fresh[0]");
    const copied = { keep: { list: [null] } } as unknown as JsonValue;
    expect(rejection(() => assertJson(copied, "s", never, known)).path).toBe("s.keep.list[0]");
  });
});

describe("canonical serialization and hashing", () => {
  it("is independent of key order", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 1, x: 2 }], c: "s" } })).toBe(
      '{"a":{"c":"s","d":[1,{"x":2,"y":1}]},"b":1}',
    );
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

describe("diffFields", () => {
  it("returns the minimal patch that reproduces the target", () => {
    const before = { a: 1, b: { c: [1], d: "x" }, e: true } as JsonObject;
    const after = { a: 1, b: { c: [1, 2] }, f: { g: 1 } } as JsonObject;
    const patch = diffFields(before, after)!;
    expect(patch).toEqual({ b: { c: [1, 2], d: null }, e: null, f: { g: 1 } });
    expect(applyJsonPatch(before, patch)).toEqual(after);
  });

  it("is undefined for equal values", () => {
    expect(diffFields({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBeUndefined();
  });
});

describe("stateJson", () => {
  it("puts each top-level key on its own line, the rest inline; it parses back to the same value", () => {
    const value = {
      contract: { lang: "ts", api: { v: [1, "two", null, true] } },
      working: JSON.parse('{"__proto__": "data"}'),
    };
    const text = stateJson(value);
    expect(text).toBe(
      '{\n  "contract": {"lang": "ts", "api": {"v": [1, "two", null, true]}},\n  "working": {"__proto__": "data"}\n}',
    );
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
    expect(text.length, "shorter than indented JSON").toBeLessThan(JSON.stringify(value, null, 2).length);
    expect(stateJson({})).toBe("{}");
  });
});

describe("overlayJson and deep equality", () => {
  it("upper wins, absent keys reveal lower, arrays replace", () => {
    expect(overlayJson({ a: 1, n: { x: 1, y: 1 }, l: [1, 2] }, { n: { y: 2 }, l: [3] })).toEqual({
      a: 1,
      n: { x: 1, y: 2 },
      l: [3],
    });
  });

  it("compares deeply", () => {
    // two states are equal exactly when diffFields has nothing to record
    const equal = (a: JsonObject, b: JsonObject) => diffFields(a, b) === undefined;
    expect(equal({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(equal({ a: [1] }, { a: { 0: 1 } })).toBe(false);
    expect(equal({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });
});
