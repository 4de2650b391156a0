import { describe, expect, it } from "vitest";
import { StateFlowError } from "../../core/errors.ts";
import { assertPromotions, promotionProblem, readPromotions } from "../../core/promotions.ts";

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
