import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { selectRestore, type BranchMarker, type PointerCheck } from "../../machines/restore.ts";

const checks = (table: Record<string, PointerCheck>) => (rev: string) => table[rev] ?? "invalid";
const rev = (revision: string): BranchMarker => ({ kind: "revision", revision });

describe("selectRestore (I1.11)", () => {
  it("I1.11 no markers → none; newest valid revision wins", () => {
    expect(selectRestore([], checks({}), "S")).toEqual({ kind: "none" });
    expect(selectRestore([rev("a"), rev("b")], checks({ a: "valid", b: "valid" }), "S")).toEqual({
      kind: "revision",
      revision: "b",
      skippedInvalid: 0,
    });
  });

  it("I1.11 invalid immutable targets fall back through the branch to an older valid revision", () => {
    expect(selectRestore([rev("a"), rev("b"), rev("c")], checks({ a: "valid" }), "S")).toEqual({
      kind: "revision",
      revision: "a",
      skippedInvalid: 2,
    });
  });

  it("I1.11 unavailable cohorts and lock failures retain the selected pointer, never an older disabled marker", () => {
    const markers: BranchMarker[] = [{ kind: "disabled" }, rev("a")];
    expect(selectRestore(markers, checks({ a: "unavailable" }), "S")).toEqual({
      kind: "unproven",
      revision: "a",
      reason: "unavailable",
    });
    expect(selectRestore(markers, checks({ a: "lockBusy" }), "S")).toEqual({ kind: "lockBusy", revision: "a" });
  });

  it("I1.11 only invalid pointers → unproven (fails closed), not none", () => {
    expect(selectRestore([rev("x")], checks({}), "S")).toEqual({ kind: "unproven", revision: null, reason: "noValidPointer" });
  });

  it("I1.4 a stop marker written by another physical session (fork, copy) restores as disabled, never passive", () => {
    const markers: BranchMarker[] = [rev("a"), { kind: "disabled", stoppedBy: "PARENT" }];
    expect(selectRestore(markers, checks({ a: "valid" }), "FORK")).toEqual({ kind: "disabled" });
    expect(selectRestore(markers, checks({ a: "valid" }), "PARENT")).toEqual({ kind: "passive" });
    expect(selectRestore([{ kind: "disabled" }], checks({}), "PARENT")).toEqual({ kind: "disabled" });
  });

  it("I1.11 property: the result is decided by the newest non-invalid marker", () => {
    const marker = fc.oneof(
      fc.constantFrom("a", "b", "c", "d").map((r) => rev(r)),
      fc.option(fc.constantFrom("S", "T"), { nil: undefined }).map((by): BranchMarker =>
        by === undefined ? { kind: "disabled" } : { kind: "disabled", stoppedBy: by },
      ),
    );
    const verdict = fc.constantFrom<PointerCheck>("valid", "invalid", "unavailable", "lockBusy");
    fc.assert(
      fc.property(fc.array(marker, { maxLength: 8 }), fc.record({ a: verdict, b: verdict, c: verdict, d: verdict }), (markers, table) => {
        const result = selectRestore(markers, checks(table), "S");
        const decisive = [...markers].reverse().find((m) => m.kind === "disabled" || table[m.revision as "a"] !== "invalid");
        if (!decisive) {
          expect(result.kind, "I1.11 no decisive marker").toBe(markers.length ? "unproven" : "none");
          return;
        }
        if (decisive.kind === "disabled") {
          expect(result.kind, "I1.11 disabled marker").toBe(decisive.stoppedBy === "S" ? "passive" : "disabled");
          return;
        }
        const expected = { valid: "revision", unavailable: "unproven", lockBusy: "lockBusy", invalid: "?" }[table[decisive.revision as "a"]];
        expect(result.kind, "I1.11 decisive revision").toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
