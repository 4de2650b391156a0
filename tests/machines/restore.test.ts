import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { frozenRevision, selectRestore, type BranchMarker, type PointerCheck } from "../../machines/restore.ts";

const checks = (table: Record<string, PointerCheck>) => (rev: string) => table[rev] ?? "invalid";
const rev = (revision: string): BranchMarker => ({ kind: "revision", revision });

describe("selectRestore (I1.11)", () => {
  it("I1.11 a malformed entry is skipped like an invalid target; a stopped revision restores passive", async () => {
    expect(await selectRestore([rev("a"), { kind: "malformed" }], checks({ a: "valid" }), "S")).toEqual({
      kind: "revision",
      revision: "a",
      skippedInvalid: 1,
    });
    expect(await selectRestore([{ kind: "malformed" }], checks({}), "S")).toEqual({
      kind: "unproven",
      revision: null,
      reason: "noValidPointer",
    });
    expect(await selectRestore([rev("a"), rev("b")], checks({ a: "valid", b: "stopped" }), "S")).toEqual({
      kind: "passive",
    });
  });

  it("I1.11 checks run lazily: nothing older than the decisive marker is read", async () => {
    const asked: string[] = [];
    const result = await selectRestore(
      [rev("a"), rev("b"), rev("c")],
      async (r) => {
        asked.push(r);
        return r === "b" ? "valid" : "invalid";
      },
      "S",
    );
    expect(result).toEqual({ kind: "revision", revision: "b", skippedInvalid: 1 });
    expect(asked).toEqual(["c", "b"]);
  });

  it("I1.11 no markers → none; newest valid revision wins", async () => {
    expect(await selectRestore([], checks({}), "S")).toEqual({ kind: "none" });
    expect(await selectRestore([rev("a"), rev("b")], checks({ a: "valid", b: "valid" }), "S")).toEqual({
      kind: "revision",
      revision: "b",
      skippedInvalid: 0,
    });
  });

  it("I1.11 invalid immutable targets fall back through the branch to an older valid revision", async () => {
    expect(await selectRestore([rev("a"), rev("b"), rev("c")], checks({ a: "valid" }), "S")).toEqual({
      kind: "revision",
      revision: "a",
      skippedInvalid: 2,
    });
  });

  it(
    "I1.11 unavailable cohorts and lock failures retain " + "the selected pointer, never an older disabled marker",
    async () => {
      const markers: BranchMarker[] = [{ kind: "disabled" }, rev("a")];
      expect(await selectRestore(markers, checks({ a: "unavailable" }), "S")).toEqual({
        kind: "unproven",
        revision: "a",
        reason: "unavailable",
      });
      expect(await selectRestore(markers, checks({ a: "lockBusy" }), "S")).toEqual({ kind: "lockBusy", revision: "a" });
    },
  );

  it("I1.11 only invalid pointers → unproven (fails closed), not none", async () => {
    expect(await selectRestore([rev("x")], checks({}), "S")).toEqual({
      kind: "unproven",
      revision: null,
      reason: "noValidPointer",
    });
  });

  it(
    "I1.4 a stop marker written by another physical session " + "(fork, copy) restores as disabled, never passive",
    async () => {
      const markers: BranchMarker[] = [rev("a"), { kind: "disabled", stoppedBy: "PARENT" }];
      expect(await selectRestore(markers, checks({ a: "valid" }), "FORK")).toEqual({
        kind: "disabled",
        inherited: true,
      });
      expect(await selectRestore(markers, checks({ a: "valid" }), "PARENT")).toEqual({ kind: "passive" });
      expect(await selectRestore([{ kind: "disabled" }], checks({}), "PARENT")).toEqual({ kind: "disabled" });
    },
  );

  it("I1.11 an older entry form's pointer undergoes the same checks and says it was legacy when selected", async () => {
    const legacy = (revision: string): BranchMarker => ({ kind: "revision", revision, legacy: true });
    expect(await selectRestore([rev("a"), legacy("b")], checks({ a: "valid", b: "valid" }), "S")).toEqual({
      kind: "revision",
      revision: "b",
      skippedInvalid: 0,
      legacy: true,
    });
    expect(await selectRestore([rev("a"), legacy("x")], checks({ a: "valid" }), "S")).toEqual({
      kind: "revision",
      revision: "a",
      skippedInvalid: 1,
    });
    expect(await selectRestore([legacy("a")], checks({ a: "unavailable" }), "S")).toMatchObject({ kind: "unproven" });
    expect(await selectRestore([legacy("a")], checks({ a: "lockBusy" }), "S")).toMatchObject({ kind: "lockBusy" });
  });

  it("I1.17 an unanchored older entry ends the walk: no older revision, no older disabled marker", async () => {
    const unanchored: BranchMarker = { kind: "unanchored", members: ["meta", "state"] };
    const asked: string[] = [];
    const result = await selectRestore(
      [{ kind: "disabled" }, rev("a"), unanchored],
      (r) => (asked.push(r), "valid"),
      "S",
    );
    expect(result).toEqual({ kind: "unanchored", members: ["meta", "state"] });
    expect(asked, "nothing older than it is read").toEqual([]);
    // A newer decisive marker still wins over it.
    expect(await selectRestore([unanchored, rev("a")], checks({ a: "valid" }), "S")).toMatchObject({
      kind: "revision",
      revision: "a",
    });
  });

  it("I1.11 property: the result is decided by the newest non-invalid marker", async () => {
    const marker = fc.oneof(
      fc.constantFrom("a", "b", "c", "d").map((r) => rev(r)),
      fc.constant<BranchMarker>({ kind: "unanchored", members: ["state"] }),
      fc
        .option(fc.constantFrom("S", "T"), { nil: undefined })
        .map((by): BranchMarker => (by === undefined ? { kind: "disabled" } : { kind: "disabled", stoppedBy: by })),
    );
    const verdict = fc.constantFrom<PointerCheck>("valid", "stopped", "invalid", "unavailable", "lockBusy");
    await fc.assert(
      fc.asyncProperty(
        fc.array(marker, { maxLength: 8 }),
        fc.record({ a: verdict, b: verdict, c: verdict, d: verdict }),
        async (markers, table) => {
          const result = await selectRestore(markers, checks(table), "S");
          const decisive = [...markers]
            .reverse()
            .find(
              (m) =>
                m.kind === "disabled" ||
                m.kind === "unanchored" ||
                (m.kind === "revision" && table[m.revision as "a"] !== "invalid"),
            );
          if (!decisive) {
            expect(result.kind, "I1.11 no decisive marker").toBe(markers.length ? "unproven" : "none");
            return;
          }
          if (decisive.kind === "unanchored") {
            expect(result.kind, "I1.17 an unanchored older entry fails closed").toBe("unanchored");
            return;
          }
          if (decisive.kind === "disabled") {
            expect(result.kind, "I1.11 disabled marker").toBe(decisive.stoppedBy === "S" ? "passive" : "disabled");
            return;
          }
          if (decisive.kind !== "revision") throw new Error("unreachable");
          const expected = {
            valid: "revision",
            stopped: "passive",
            unavailable: "unproven",
            lockBusy: "lockBusy",
            invalid: "?",
          }[table[decisive.revision as "a"] as "valid"];
          expect(result.kind, "I1.11 decisive revision").toBe(expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("frozenRevision", () => {
  it("is the newest well-formed revision of the branch (the stop appends it right before its disabled marker)", () => {
    const markers: BranchMarker[] = [
      { kind: "revision", revision: "r1" },
      { kind: "revision", revision: "r2" },
      { kind: "malformed" },
      { kind: "disabled", stoppedBy: "S" },
    ];
    expect(frozenRevision(markers)).toBe("r2");
    expect(frozenRevision([{ kind: "disabled" }])).toBeNull();
    expect(frozenRevision([])).toBeNull();
  });
});
