import { describe, expect, it } from "vitest";
import { StateFlowError } from "../../../storage/core/errors.ts";
import { hashJson } from "../../../storage/core/json.ts";
import {
  assertPromotedBodiesKept,
  bodyContentHash,
  bodyPointer,
  memoryOwnership,
  assertPromotions,
  parseBodyPointer,
  promotionProblem,
  readPromotions,
} from "../../../storage/core/promotions.ts";
import { emptyScopeState, type ScopeName, type ScopeState } from "../../../storage/core/scope-state.ts";

describe("memory promotions", () => {
  it("a record needs a status and an owner; accepted also the exact destination pointer and revision", () => {
    expect(promotionProblem({ status: "pending", owner: "notes", extra: 1 })).toBeNull();
    expect(promotionProblem({ status: "accepted", owner: "notes", pointer: "n://1", revision: "r1" })).toBeNull();
    expect(promotionProblem({ status: "done", owner: "notes" })).toMatch(/status must be one of pending/);
    expect(promotionProblem({ status: "failed", owner: " " })).toMatch(/owner must be a non-empty string/);
    expect(promotionProblem({ status: "accepted", owner: "notes", pointer: "n://1" })).toMatch(/pointer and revision/);
    expect(promotionProblem("accepted")).toMatch(/must be an object/);
  });

  it("reads every record, sorted; a malformed or unevidenced accepted record is invalid, never accepted", () => {
    const read = readPromotions({
      b: { status: "accepted", owner: "notes" },
      a: { status: "failed", owner: "notes", error: "offline" },
      c: { status: "accepted", owner: "notes", pointer: "n://c", revision: "r3" },
    });
    expect(read.valid.map((p) => [p.id, p.status])).toEqual([
      ["a", "failed"],
      ["c", "accepted"],
    ]);
    expect(read.invalid).toEqual([{ id: "b", problem: expect.stringMatching(/pointer and revision/) }]);
    expect(readPromotions(undefined)).toEqual({ valid: [], invalid: [] });
  });

  it("a patch may not leave a record it touches malformed (named, with the record to send)", () => {
    expect(() => assertPromotions(["p"], { p: { status: "pending", owner: "notes" } })).not.toThrow();
    expect(() => assertPromotions(["p"], {}), "a deletion").not.toThrow();
    const error = (() => {
      try {
        assertPromotions(["p"], { p: { status: "accepted", owner: "notes" } });
      } catch (e) {
        return e as StateFlowError;
      }
    })();
    expect(error?.code).toBe("invalid-promotion");
    expect(error?.path).toBe("global.working.memory_promotions.p");
    expect(error?.message).toContain('"pointer":"notes://memo/42","revision":"r7"');
  });
});

function states(global: object, cwd: object = {}): Record<ScopeName, ScopeState> {
  return {
    global: { ...emptyScopeState(), working: { ...global } } as ScopeState,
    cwd: { ...emptyScopeState(), working: { ...cwd } } as ScopeState,
    session: emptyScopeState(),
  };
}

const BODY = "/cwd/working/plan";
const ACCEPTED = { status: "accepted", owner: "notes", pointer: "notes://42", revision: "r7", body: BODY };

function refusedWith(work: () => void): string {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(StateFlowError);
    expect((error as StateFlowError).code).toBe("promotion-unproven");
    return (error as StateFlowError).message;
  }
  throw new Error("expected promotion-unproven");
}

describe("promoted bodies", () => {
  it("a body pointer is a JSON Pointer into a scope's artifacts, contract or working", () => {
    expect(parseBodyPointer("/cwd/working/plan")).toEqual({ scope: "cwd", path: ["working", "plan"] });
    expect(parseBodyPointer("/global/artifacts/~1k~1a.md")).toEqual({
      scope: "global",
      path: ["artifacts", "/k/a.md"],
    });
    for (const bad of ["cwd/working/x", "/cwd/working", "/cwd/response/x", "/repo/working/x", 3]) {
      expect(parseBodyPointer(bad), String(bad)).toBeNull();
    }
    expect(promotionProblem({ status: "pending", owner: "n", body: "working.plan" })).toMatch(/body must be a JSON/);
  });

  it("deleting a named body whose promotion is not proven is refused; with its content hash it is allowed", () => {
    const plan = { plan: "ship v2" };
    const pending = { p1: { ...ACCEPTED, status: "pending" } };
    const before = states({ memory_promotions: pending }, plan);
    expect(refusedWith(() => assertPromotedBodiesKept(before, states({ memory_promotions: pending })))).toContain(
      "that record is pending, not accepted",
    );
    const noContent = states({ memory_promotions: { p1: ACCEPTED } });
    expect(refusedWith(() => assertPromotedBodiesKept(before, noContent))).toContain(
      `that record's content is not ${hashJson("ship v2")}`,
    );
    expect(refusedWith(() => assertPromotedBodiesKept(before, states({})))).toContain("also deletes that record");
    const excerpt = states({ memory_promotions: { p1: { ...ACCEPTED, content: "ship v2" } } });
    expect(
      refusedWith(() => assertPromotedBodiesKept(before, excerpt)),
      "an excerpt is no identity",
    ).toContain("content is not");
    const proven = states({ memory_promotions: { p1: { ...ACCEPTED, content: bodyContentHash("ship v2") } } });
    expect(() => assertPromotedBodiesKept(before, proven)).not.toThrow();
  });

  it("a parent deletion counts; a body that stays, or never existed, needs nothing", () => {
    const nested = { ...ACCEPTED, status: "failed", body: "/cwd/working/notes/plan" };
    const before = states({ memory_promotions: { p1: nested } }, { notes: { plan: "x", other: 1 } });
    const message = refusedWith(() => assertPromotedBodiesKept(before, states({ memory_promotions: { p1: nested } })));
    expect(message).toContain("removes /cwd/working/notes,");
    const kept = states({ memory_promotions: { p1: nested } }, { notes: { plan: "x" } });
    expect(() => assertPromotedBodiesKept(before, kept)).not.toThrow();
    const never = states({ memory_promotions: { p1: nested } });
    expect(() => assertPromotedBodiesKept(never, never)).not.toThrow();
  });
});

describe("a promotion removes a body only with proof of an identical copy, whatever its record names", () => {
  const body = { steps: ["tag v2", "announce"], owner: "me" };
  const hash = bodyContentHash(body);
  const proof = { status: "accepted", owner: "notes", pointer: "notes://42", revision: "r7", content: hash };

  it("the proof is the canonical hash of the body, however its keys are ordered", () => {
    expect(hash).toBe(hashJson({ owner: "me", steps: ["tag v2", "announce"] }));
    expect(hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(bodyPointer("cwd", ["artifacts", "/k/a.md"])).toBe("/cwd/artifacts/~1k~1a.md");
  });

  it("a record naming another body (or none) does not let the same patch delete this one", () => {
    const before = states({}, { plan: body, other: "keep?" });
    const namesPlan = { ...proof, body: "/cwd/working/plan" };
    const message = refusedWith(() =>
      assertPromotedBodiesKept(before, states({ memory_promotions: { p1: namesPlan } }, { plan: body })),
    );
    expect(message).toContain("removes /cwd/working/other");
    expect(message).toContain("also writes promotion record(s) p1");
    expect(message).toContain(`"content":"${bodyContentHash("keep?")}"`);
    const unnamed = states({ memory_promotions: { p1: { status: "pending", owner: "notes" } } }, { plan: body });
    expect(refusedWith(() => assertPromotedBodiesKept(before, unnamed))).toContain("removes /cwd/working/other");
    // The advice: records in a patch of their own, other memory in another.
    const recorded = states({ memory_promotions: { p1: namesPlan } }, { plan: body, other: "keep?" });
    expect(() => assertPromotedBodiesKept(before, recorded)).not.toThrow();
    const upkeep = states({ memory_promotions: { p1: namesPlan } }, { plan: body });
    expect(() => assertPromotedBodiesKept(recorded, upkeep), "ordinary upkeep of an unpromoted body").not.toThrow();
  });

  it("replacing a body by a pointer is a removal: refused while unproven, allowed with its hash", () => {
    const before = states({}, { plan: body });
    const stub = { plan: { promoted: "notes://42" } };
    const pending = states({ memory_promotions: { p1: { status: "pending", owner: "notes" } } }, stub);
    const message = refusedWith(() => assertPromotedBodiesKept(before, pending));
    expect(message).toContain(`"content":"${hash}","body":"/cwd/working/plan"`);
    const wrong = states({ memory_promotions: { p1: { ...proof, content: bodyContentHash("tag v2") } } }, stub);
    expect(refusedWith(() => assertPromotedBodiesKept(before, wrong))).toContain("no accepted record's content is");
    expect(() => assertPromotedBodiesKept(before, states({ memory_promotions: { p1: proof } }, stub))).not.toThrow();
  });

  it("a record whose content hashes a body protects it in later patches, named or not", () => {
    const pending = { p1: { status: "pending", owner: "notes", content: hash } };
    const before = states({ memory_promotions: pending }, { plan: body });
    expect(refusedWith(() => assertPromotedBodiesKept(before, states({ memory_promotions: pending })))).toContain(
      "promotion p1 promotes it, but that record is pending",
    );
    const accepted = states({ memory_promotions: { p1: proof } }, { plan: body });
    expect(() => assertPromotedBodiesKept(accepted, states({ memory_promotions: { p1: proof } }))).not.toThrow();
  });

  it("the hash of a body containing the removed value proves it; unrelated deletions need nothing", () => {
    const notes = { plan: "x", other: 1 };
    const record = { ...proof, content: bodyContentHash(notes) };
    const before = states({ memory_promotions: { p1: record } }, { notes });
    const after = states({ memory_promotions: { p1: { ...record, revision: "r8" } } }, { notes: { other: 1 } });
    expect(() => assertPromotedBodiesKept(before, after)).not.toThrow();
    const plain = states({}, { a: 1, b: 2 });
    expect(() => assertPromotedBodiesKept(plain, states({}, { a: 1 })), "no promotion at all").not.toThrow();
  });
});

describe("memory ownership", () => {
  it("shared once a promotion is accepted; each failed or unknown one activates State Flow's body as fallback", () => {
    const records = {
      a: { status: "accepted", owner: "notes", pointer: "n://1", revision: "r1" },
      f: { status: "failed", owner: "wiki", body: "/cwd/working/plan" },
      u: { status: "unknown", owner: "wiki", body: "/cwd/working/gone" },
      p: { status: "pending", owner: "wiki" },
    };
    const scopes = states({ memory_promotions: records }, { plan: "x" });
    const owned = memoryOwnership(readPromotions(records), scopes);
    expect(owned.mode).toBe("shared");
    expect(owned.externalOwners).toEqual(["notes"]);
    expect(owned.fallbacks.map(({ record, kept }) => [record.id, kept])).toEqual([
      ["f", true],
      ["u", false],
    ]);
    const none = memoryOwnership(readPromotions({ p: records.p }), scopes);
    expect(none).toEqual({ mode: "state-flow", externalOwners: [], fallbacks: [] });
  });
});
