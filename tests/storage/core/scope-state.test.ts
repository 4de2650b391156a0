import { describe, expect, it } from "vitest";
import { rejection } from "../../support/rejection.ts";
import type { StateFlowError } from "../../../storage/core/errors.ts";
import {
  applyScopePatch,
  emptyScopeState,
  overlayScopes,
  parseScopePatch,
  parseScopeState,
  type ScopeState,
} from "../../../storage/core/scope-state.ts";

const state = (fields: Partial<ScopeState>): ScopeState => ({ ...emptyScopeState(), ...fields });

describe("parseScopeState", () => {
  it("accepts exactly the four semantic fields", () => {
    expect(parseScopeState(emptyScopeState(), "session")).toEqual({
      artifacts: {},
      contract: {},
      working: {},
      response: "",
    });
  });

  it("rejects unknown and missing fields, naming them", () => {
    expect(rejection(() => parseScopeState({ ...emptyScopeState(), extra: 1 }, "cwd")).message).toMatch(
      /^cwd\.extra: unknown field; a scope holds exactly artifacts, contract, working and response/,
    );
    const { working: _w, ...missing } = emptyScopeState();
    expect(rejection(() => parseScopeState(missing, "cwd")).message).toMatch(
      /^cwd\.working: is missing; a scope holds exactly/,
    );
    expect(rejection(() => parseScopeState({ ...emptyScopeState(), response: 3 }, "cwd")).message).toBe(
      "cwd.response: must be a string",
    );
  });

  it("validates artifacts: description required, tags unique and trimmed", () => {
    expect(
      rejection(() => parseScopeState(state({ artifacts: { "/k.md": { description: " " } } }), "global")).message,
    ).toMatch(/^global\.artifacts\["\/k\.md"\]\.description: must be a non-empty description/);
    expect(
      rejection(() =>
        parseScopeState(state({ artifacts: { "/k.md": { description: "d", tags: ["a", "a"] } } }), "global"),
      ).message,
    ).toMatch(/tags: must not repeat a tag/);
    expect(
      rejection(() => parseScopeState(state({ artifacts: { "/k.md": { description: "d", tags: [" a"] } } }), "global"))
        .message,
    ).toMatch(/tags\[0\]: must be a non-empty trimmed string/);
    const ok = state({
      artifacts: { "/k.md": { description: "d", tags: ["a"], compilation: {}, anything: { n: 1 } } },
    });
    expect(parseScopeState(ok, "global")).toEqual(ok);
  });

  it("rejects nulls anywhere in materialized state", () => {
    expect(rejection(() => parseScopeState(state({ working: { list: [null] } as never }), "session")).message).toBe(
      "session.working.list[0]: null is not allowed in materialized state",
    );
    const deep = state({ contract: { deep: [{ a: null }] } as never });
    expect(rejection(() => parseScopeState(deep, "session")).path).toBe("session.contract.deep[0].a");
  });

  it.each(["__proto__", "constructor", "prototype"])("holds an artifact keyed %s to the shape of any other", (key) => {
    const refusal = (artifacts: string) =>
      rejection(() => parseScopeState(state({ artifacts: JSON.parse(artifacts) }), "global"));
    const error = refusal(`{"${key}":{"kind":"doc"}}`);
    expect(error.code).toBe("invalid-artifact");
    expect(error.path).toBe(`global.artifacts.${key}.description`);
    const ordinary = refusal('{"k":{"kind":"doc"}}');
    expect(error.message.slice(error.path!.length)).toBe(ordinary.message.slice(ordinary.path!.length));
    expect(refusal(`{"${key}":5}`).path).toBe(`global.artifacts.${key}`);
    const good = JSON.parse(`{"${key}":{"description":"d"}}`);
    expect(Object.keys(parseScopeState(state({ artifacts: good }), "global").artifacts)).toEqual([key]);
  });
});

describe("parseScopePatch", () => {
  it("refuses response from the model but lets the runtime capture it", () => {
    expect(rejection(() => parseScopePatch({ response: "hi" }, "session", { allowResponse: false })).message).toBe(
      "session.response: response is not patchable; the runtime captures your final answer as response",
    );
    expect(parseScopePatch({ response: "hi" }, "session", { allowResponse: true })).toEqual({ response: "hi" });
  });

  it("refuses empty patches, unknown fields, field deletion and non-object fields", () => {
    expect(rejection(() => parseScopePatch({}, "cwd", { allowResponse: false })).message).toMatch(
      /^cwd: empty scope patch; omit scopes you do not change/,
    );
    expect(rejection(() => parseScopePatch({ notes: {} }, "cwd", { allowResponse: false })).message).toBe(
      "cwd.notes: unknown field; a scope patch may touch only artifacts, contract, working",
    );
    expect(rejection(() => parseScopePatch({ working: null }, "cwd", { allowResponse: false })).message).toMatch(
      /^cwd\.working: a scope field cannot be deleted/,
    );
    expect(rejection(() => parseScopePatch({ working: [1] }, "cwd", { allowResponse: false })).message).toBe(
      "cwd.working: must be an object (it merges into the field)",
    );
    expect(rejection(() => parseScopePatch("x", "cwd", { allowResponse: false })).message).toMatch(
      /^cwd: a scope patch must be an object/,
    );
  });

  it("refuses a null inside an object inside an array (arrays replace, so it would be stored)", () => {
    const model = { allowResponse: false };
    const error = rejection(() => parseScopePatch({ contract: { deep: [{ a: null }] } }, "session", model));
    expect(error.code).toBe("invalid-json");
    expect(error.path).toBe("session.contract.deep[0].a");
    expect(error.message).toBe(
      "session.contract.deep[0].a: null inside an array cannot be stored: an array replaces the stored value " +
        "whole, objects in it included (nothing in it merges, so null deletes nothing there), and state never " +
        'holds null. Send the complete array without it: leave that item or key out, or use another value such as "" ' +
        "or false",
    );
    const tags = { artifacts: { "/a.md": { description: "d", tags: ["x", null] } } };
    expect(rejection(() => parseScopePatch(tags, "cwd", model)).path).toBe('cwd.artifacts["/a.md"].tags[1]');
  });

  it("the advised patch, the complete array without the null, is accepted and replaces the stored array", () => {
    const model = { allowResponse: false };
    const stored = applyScopePatch(
      emptyScopeState(),
      parseScopePatch({ contract: { deep: [{ a: 1, b: 2 }, { c: 3 }] } }, "session", model),
      "session",
    );
    // Meant: drop key a of the first item. Refused as written; accepted with the key left out.
    expect(() => parseScopePatch({ contract: { deep: [{ a: null }] } }, "session", model)).toThrow(
      /leave that item or key out/,
    );
    const advised = parseScopePatch({ contract: { deep: [{ b: 2 }, { c: 3 }] } }, "session", model);
    expect(applyScopePatch(stored, advised, "session").contract).toEqual({ deep: [{ b: 2 }, { c: 3 }] });
    // Or the other value the message names.
    const replaced = parseScopePatch({ contract: { deep: [{ a: "", b: 2 }] } }, "session", model);
    expect(applyScopePatch(stored, replaced, "session").contract).toEqual({ deep: [{ a: "", b: 2 }] });
  });

  it("still lets null delete keys at any depth of merging objects", () => {
    const patch = { working: { a: { b: { c: null } }, d: null } };
    expect(parseScopePatch(patch, "session", { allowResponse: false })).toEqual(patch);
  });

  it("leaves the input untouched and returns a detached copy", () => {
    const input = { working: { a: { b: 1 } } };
    const parsed = parseScopePatch(input, "session", { allowResponse: false });
    (parsed.working!.a as Record<string, number>).b = 2;
    expect(input).toEqual({ working: { a: { b: 1 } } });
  });
});

describe("parseScopePatch: provenance", () => {
  const model = { allowResponse: false };

  it("refuses model-authored provenance in an artifact entry, naming the field", () => {
    const patch = { artifacts: { "/k/a.md": { description: "d", sourceHash: `sha256:${"0".repeat(64)}` } } };
    const error = rejection(() => parseScopePatch(patch, "global", model));
    expect(error.code).toBe("forged-provenance");
    expect(error.path).toBe('global.artifacts["/k/a.md"].sourceHash');
    expect(error.message).toMatch(/is runtime-owned provenance; the runtime records the source hash/);
    const retired = { artifacts: { "/k/a.md": { description: "d", compiled_at: "2020-01-01T00:00:00Z" } } };
    expect(rejection(() => parseScopePatch(retired, "cwd", { allowResponse: true })).message).toMatch(
      /compiled_at: is a retired embedded provenance field/,
    );
  });

  it("lets a stored replay record keep retired embedded fields readable", () => {
    const stored = { artifacts: { "/k/a.md": { description: "d", hash: "sha256:00", compiler: "v0" } } };
    expect(parseScopePatch(stored, "global", { allowResponse: true, allowProvenance: true })).toEqual(stored);
    const next = applyScopePatch(emptyScopeState(), stored as never, "global");
    expect(parseScopeState(JSON.parse(JSON.stringify(next)), "global")).toEqual(next);
  });

  it("still lets the model delete an artifact or a retired field", () => {
    const patch = { artifacts: { "/k/a.md": null, "/k/b.md": { hash: null } } };
    expect(parseScopePatch(patch, "global", model)).toEqual(patch);
  });
});

describe("applyScopePatch", () => {
  it("validates the result (an artifact patch must leave a description)", () => {
    const base = state({ artifacts: { "/a.md": { description: "d" } } });
    expect(
      rejection(() => applyScopePatch(base, { artifacts: { "/a.md": { description: null } } } as never, "global"))
        .message,
    ).toMatch(/^global\.artifacts\["\/a\.md"\]\.description: is missing; every artifact needs a non-empty description/);
    expect(applyScopePatch(base, { artifacts: { "/a.md": null } } as never, "global").artifacts).toEqual({});
    const tagged = applyScopePatch(base, { artifacts: { "/a.md": { tags: ["t"] } } } as never, "global");
    expect(tagged.artifacts).toEqual({ "/a.md": { description: "d", tags: ["t"] } });
    const error = rejection(() => applyScopePatch(base, { artifacts: { "/b.md": { kind: "" } } } as never, "global"));
    expect(error.code).toBe("invalid-artifact");
    expect(error.path).toBe('global.artifacts["/b.md"].description');
  });

  it("accepts exactly what parseScopeState accepts when the result is read back", () => {
    const input = { contract: { deep: [{ a: 1, b: [{ c: "x" }] }], gone: null } };
    const patch = parseScopePatch(input, "session", { allowResponse: false });
    const next = applyScopePatch(state({ contract: { gone: 1 } }), patch, "session");
    expect(parseScopeState(JSON.parse(JSON.stringify(next)), "session")).toEqual(next);
    expect(next.contract).toEqual({ deep: [{ a: 1, b: [{ c: "x" }] }] });
  });

  it("refuses an artifact keyed __proto__ without a description, as for any other key", () => {
    const input = JSON.parse('{"artifacts":{"__proto__":{"kind":"doc"}}}');
    const patch = parseScopePatch(input, "global", { allowResponse: false });
    const error = rejection(() => applyScopePatch(emptyScopeState(), patch, "global"));
    expect(error.path).toBe("global.artifacts.__proto__.description");
  });
});

describe("overlayScopes", () => {
  it("session wins, a scope-local deletion reveals the lower scope", () => {
    const g = state({ working: { topic: "g", only: "g" }, response: "global answer" });
    const c = state({ working: { topic: "c" } });
    const s = state({ working: { nested: { x: 1 } } });
    expect(overlayScopes(g, c, s)).toEqual({
      artifacts: {},
      contract: {},
      working: { topic: "c", only: "g", nested: { x: 1 } },
      response: "global answer",
    });
    expect(overlayScopes(g, c, state({ response: "mine" })).response).toBe("mine");
  });
});

describe("the retired Skill store", () => {
  it("a patch cannot recreate contract.compiled_skills (named, with what to write instead); null deletes it", () => {
    const error = (() => {
      try {
        parseScopePatch({ contract: { compiled_skills: { x: {} } } }, "cwd", { allowResponse: false });
      } catch (e) {
        return e as StateFlowError;
      }
    })();
    expect(error?.code).toBe("retired-store");
    expect(error?.path).toBe("cwd.contract.compiled_skills");
    expect(error?.message).toContain('"kind":"skill"');
    expect(() =>
      parseScopePatch({ contract: { compiled_skills: null } }, "cwd", { allowResponse: false }),
    ).not.toThrow();
    expect(
      () =>
        parseScopePatch({ contract: { compiled_skills: { x: {} } } }, "cwd", {
          allowResponse: true,
          allowProvenance: true,
        }),
      "stored records still replay",
    ).not.toThrow();
  });
});

describe("key order", () => {
  it("an applied patch leaves each section in the store's (sorted) key order, nested objects too", () => {
    const after = applyScopePatch(emptyScopeState(), { contract: { zeta: 1, alpha: { y: 1, b: 2 } } }, "session");
    expect(JSON.stringify(after.contract)).toBe('{"alpha":{"b":2,"y":1},"zeta":1}');
    expect(Object.keys(after)).toEqual(["artifacts", "contract", "working", "response"]);
  });
});
