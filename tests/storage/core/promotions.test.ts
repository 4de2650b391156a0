import { describe, expect, it } from "vitest";
import { StateFlowError } from "../../../storage/core/errors.ts";
import {
  assertPromotedBodiesKept,
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

  it("deleting a body whose promotion is not proven is refused; with content evidence it is allowed", () => {
    const plan = { plan: "ship v2" };
    const pending = { p1: { ...ACCEPTED, status: "pending" } };
    const before = states({ memory_promotions: pending }, plan);
    expect(refusedWith(() => assertPromotedBodiesKept(before, states({ memory_promotions: pending })))).toContain(
      "its record is pending, not accepted",
    );
    const noContent = states({ memory_promotions: { p1: ACCEPTED } });
    expect(refusedWith(() => assertPromotedBodiesKept(before, noContent))).toContain("no destination pointer");
    expect(refusedWith(() => assertPromotedBodiesKept(before, states({})))).toContain("also deletes its record");
    const proven = states({ memory_promotions: { p1: { ...ACCEPTED, content: "sha256:abc" } } });
    expect(() => assertPromotedBodiesKept(before, proven)).not.toThrow();
  });

  it("a parent deletion counts; a body that stays, or never existed, needs nothing", () => {
    const nested = { ...ACCEPTED, status: "failed", body: "/cwd/working/notes/plan" };
    const before = states({ memory_promotions: { p1: nested } }, { notes: { plan: "x", other: 1 } });
    const message = refusedWith(() => assertPromotedBodiesKept(before, states({ memory_promotions: { p1: nested } })));
    expect(message).toContain("deletes /cwd/working/notes/plan");
    const kept = states({ memory_promotions: { p1: nested } }, { notes: { plan: "x" } });
    expect(() => assertPromotedBodiesKept(before, kept)).not.toThrow();
    const never = states({ memory_promotions: { p1: nested } });
    expect(() => assertPromotedBodiesKept(never, never)).not.toThrow();
  });
});
