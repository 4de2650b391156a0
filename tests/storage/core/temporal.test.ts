import { describe, expect, it } from "vitest";
import { parsePatchSet, stageCohort } from "../../../storage/core/cohort.ts";
import { parseScopeStream, serializeScopeStream } from "../../../storage/core/codec.ts";
import { SCOPES, type ScopeName, type ScopeSelector } from "../../../storage/core/scope-state.ts";
import {
  MAX_TAIL,
  assertStreamInLineage,
  availableOffsets,
  createView,
  originateView,
  readTemporalState,
  recentTransitions,
  type TemporalView,
} from "../../../storage/core/temporal.ts";
import { rejection } from "../../support/rejection.ts";
import { SnapshotOracle, stableStringify, type Scope } from "../../support/oracle.ts";

const SELECTORS: ScopeSelector[] = ["effective", "global", "cwd", "session"];

/** Drives the real core and the naive oracle with the same cohorts. */
class Harness {
  view: TemporalView = originateView("L1");
  oracle = new SnapshotOracle();
  private n = 0;

  patch(input: Record<string, unknown>, options: { allowResponse?: boolean } = {}): string {
    const id = `T${++this.n}`;
    const { patches } = parsePatchSet(structuredClone(input), options);
    this.view = stageCohort(this.view, patches, id).view;
    expect(this.oracle.apply(input as Partial<Record<Scope, Record<string, unknown>>>)).toBe(true);
    return id;
  }

  /** Every available offset × scope equals the oracle, and the durable bytes round-trip. */
  assertMatchesOracle(): void {
    expect(availableOffsets(this.view.lineage)).toBe(this.oracle.available);
    for (let offset = 0; offset < this.oracle.available; offset++) {
      for (const scope of SELECTORS) {
        const read = readTemporalState(this.view, offset, scope);
        expect(stableStringify(read.state), `offset ${offset} scope ${scope}`).toBe(
          stableStringify(this.oracle.at(offset, scope)),
        );
      }
    }
    const reparsed = roundTrip(this.view);
    for (let offset = 0; offset < this.oracle.available; offset++) {
      expect(readTemporalState(reparsed, offset).state).toEqual(readTemporalState(this.view, offset).state);
    }
  }
}

const code = (fn: () => unknown): string => rejection(fn).code;

function roundTrip(view: TemporalView): TemporalView {
  const streams = Object.fromEntries(
    SCOPES.map((scope) => {
      const files = serializeScopeStream(view.streams[scope]);
      const parsed = parseScopeStream(scope, files);
      expect(serializeScopeStream(parsed)).toEqual(files);
      return [scope, parsed];
    }),
  ) as TemporalView["streams"];
  return createView(structuredClone(view.lineage), streams);
}

describe("temporal acceptance properties", () => {
  it("zero patches → current is the checkpoint, no invented past", () => {
    const h = new Harness();
    const now = readTemporalState(h.view, 0, "effective");
    expect(now.state).toEqual({ artifacts: {}, contract: {}, working: {}, response: "" });
    expect(now.boundary).toEqual({ lineage: "L1", id: "L1", step: 0 });
    expect(availableOffsets(h.view.lineage)).toBe(1);
    expect(code(() => readTemporalState(h.view, 1))).toBe("offset-unavailable");
    for (const scope of SCOPES) expect(h.view.streams[scope].tail).toEqual([]);
  });

  it("one patch shifts the old state to offset 1 and reads return detached copies", () => {
    const h = new Harness();
    h.patch({ session: { working: { step: "one" } } });
    expect(readTemporalState(h.view, 0, "session").state.working).toEqual({ step: "one" });
    expect(readTemporalState(h.view, 1, "session").state.working).toEqual({});
    const read = readTemporalState(h.view, 0, "effective");
    (read.state.working as Record<string, unknown>).step = "mutated";
    read.state.contract.injected = true;
    expect(readTemporalState(h.view, 0, "effective").state.working).toEqual({ step: "one" });
    expect(readTemporalState(h.view, 0, "session").state.contract).toEqual({});
    h.assertMatchesOracle();
  });

  it("seven patches → every offset × scope equals an independently kept snapshot oracle", () => {
    const h = new Harness();
    const scopes: ScopeName[] = ["session", "cwd", "global", "session", "cwd", "session", "global"];
    scopes.forEach((scope, i) => h.patch({ [scope]: { working: { [`k${i}`]: i, shared: `${scope}-${i}` } } }));
    expect(availableOffsets(h.view.lineage)).toBe(8);
    h.assertMatchesOracle();
  });

  it("the 8th patch folds exactly one record", () => {
    const h = new Harness();
    for (let i = 1; i <= 7; i++) h.patch({ session: { working: { n: i } } });
    const before = h.view.streams.session;
    expect(before.tail).toHaveLength(MAX_TAIL);
    expect(before.checkpoint.through.id).toBe("genesis");
    h.patch({ session: { working: { n: 8 } } });
    const after = h.view.streams.session;
    expect(after.tail).toHaveLength(MAX_TAIL);
    expect(after.checkpoint.through).toEqual({ lineage: "L1", id: "T1", step: 1 });
    expect(after.checkpoint.state.working).toEqual({ n: 1 });
    expect(after.tail.map((r) => r.id)).toEqual(["T2", "T3", "T4", "T5", "T6", "T7", "T8"]);
    expect(after.tail.slice(0, 6)).toEqual(before.tail.slice(1));
    h.assertMatchesOracle();
  });

  it("40 transitions of repeated folding stay exact", () => {
    const h = new Harness();
    const order: ScopeName[] = ["session", "cwd", "global"];
    for (let i = 0; i < 40; i++) {
      const scope = order[i % 3]!;
      h.patch({ [scope]: { working: { i, [`only${i % 5}`]: i }, contract: i % 4 === 0 ? { rev: i } : { rev: null } } });
      h.assertMatchesOracle();
    }
    for (const scope of SCOPES) expect(h.view.streams[scope].tail.length).toBeLessThanOrEqual(MAX_TAIL);
  });

  it("sparse scopes share one temporal target (the T181–T184 example)", () => {
    const h = new Harness();
    h.patch({
      global: { working: { v: "G" } },
      cwd: { working: { v: "C" } },
      session: { working: { v: "S" } },
    }); // T181
    h.patch({ cwd: { working: { v: "C'" } }, session: { working: { v: "S'" } } }); // T182
    h.patch({ global: { working: { v: "G'" } }, session: { working: { v: "S''" } } }); // T183
    h.patch({ cwd: { working: { v: "C''" } }, session: { working: { v: "S'''" } } }); // T184
    const w = (offset: number, scope: ScopeSelector) => readTemporalState(h.view, offset, scope).state.working.v;
    expect(w(1, "effective")).toBe("S''");
    expect(readTemporalState(h.view, 1, "effective").boundary.id).toBe("T3");
    expect(w(1, "cwd")).toBe("C'");
    expect(w(2, "cwd")).toBe("C'");
    expect(w(1, "global")).toBe("G'");
    for (const scope of SELECTORS) expect(readTemporalState(h.view, 2, scope).boundary.id).toBe("T2");
    h.assertMatchesOracle();
  });

  it("cwd offset n is not the cwd's n-th local patch", () => {
    const h = new Harness();
    h.patch({ cwd: { working: { c: 1 } } });
    h.patch({ session: { working: { s: 1 } } });
    h.patch({ session: { working: { s: 2 } } });
    h.patch({ cwd: { working: { c: 2 } } });
    // The cwd's previous local patch set c:1, but state.cwd[1] is the boundary T3, where c is still 1,
    // and state.cwd[2] is T2 (still 1), not the cwd's second-newest local patch followed by anything.
    expect(readTemporalState(h.view, 1, "cwd").state.working).toEqual({ c: 1 });
    expect(readTemporalState(h.view, 3, "cwd").state.working).toEqual({ c: 1 });
    expect(readTemporalState(h.view, 4, "cwd").state.working).toEqual({});
    expect(h.view.streams.cwd.tail).toHaveLength(2);
    h.assertMatchesOracle();
  });

  it("one id across a multi-scope cohort", () => {
    const h = new Harness();
    const id = h.patch({
      global: { contract: { g: 1 } },
      cwd: { contract: { c: 1 } },
      session: { contract: { s: 1 } },
    });
    const ids = SCOPES.map((s) => h.view.streams[s].tail[0]!);
    expect(new Set(ids.map((r) => r.id))).toEqual(new Set([id]));
    expect(new Set(ids.map((r) => r.step))).toEqual(new Set([1]));
    expect(new Set(ids.map((r) => r.parent))).toEqual(new Set(["L1"]));
  });

  it("unchanged scopes stay stable and true no-ops are absent from history", () => {
    const h = new Harness();
    h.patch({ cwd: { working: { keep: true } }, session: { working: { a: 1 } } });
    const cwdBefore = h.view.streams.cwd;
    const staged = stageCohort(
      h.view,
      parsePatchSet({ cwd: { working: { keep: true } }, session: { working: { a: 2 } } }).patches,
      "T2",
    );
    expect(staged.cohort.unchanged).toEqual(["cwd"]);
    expect(Object.keys(staged.cohort.records)).toEqual(["session"]);
    expect(staged.view.streams.cwd).toBe(cwdBefore);
    h.view = staged.view;
    h.oracle.apply({ session: { working: { a: 2 } } });
    expect(
      code(() => stageCohort(h.view, parsePatchSet({ session: { working: { a: 2, gone: null } } }).patches, "T3")),
    ).toBe("no-op-cohort");
    expect(h.view.lineage.window.map((t) => t.id)).toEqual(["T1", "T2"]);
    h.assertMatchesOracle();
  });

  it("deletion overlay through folding matches the oracle", () => {
    const h = new Harness();
    h.patch({ global: { working: { topic: "global", deep: { a: 1, b: 1 } } } });
    h.patch({ cwd: { working: { topic: "cwd", deep: { a: 2 } } } });
    h.patch({ session: { working: { topic: "session", deep: { b: 3 } } } });
    expect(readTemporalState(h.view).state.working).toEqual({ topic: "session", deep: { a: 2, b: 3 } });
    h.patch({ session: { working: { topic: null } } });
    expect(readTemporalState(h.view).state.working.topic).toBe("cwd");
    for (let i = 0; i < 9; i++) h.patch({ session: { working: { tick: i, deep: i % 2 ? { b: null } : { b: i } } } });
    h.patch({ cwd: { working: { topic: null } } });
    expect(readTemporalState(h.view).state.working.topic).toBe("global");
    h.assertMatchesOracle();
  });

  it("offset 8 and pre-origin reads are errors", () => {
    const h = new Harness();
    for (let i = 0; i < 3; i++) h.patch({ session: { working: { i } } });
    expect(code(() => readTemporalState(h.view, 4))).toBe("offset-unavailable");
    expect(() => readTemporalState(h.view, 4)).toThrow(/before this lineage's proven origin: only offsets 0–3 exist/);
    for (let i = 3; i < 12; i++) h.patch({ session: { working: { i } } });
    expect(readTemporalState(h.view, 7).state.working).toEqual({ i: 4 });
    expect(code(() => readTemporalState(h.view, 8))).toBe("offset-out-of-contract");
    expect(code(() => readTemporalState(h.view, -1))).toBe("offset-out-of-contract");
    expect(code(() => readTemporalState(h.view, 1.5))).toBe("offset-out-of-contract");
    expect(code(() => readTemporalState(h.view, 0, "project" as ScopeSelector))).toBe("offset-out-of-contract");
  });
});

describe("lineages sharing scopes", () => {
  it("a new lineage inherits shared streams as pre-origin history", () => {
    const a = new Harness();
    a.patch({ global: { working: { from: "A1" } } });
    a.patch({ global: { working: { from: "A2" } }, session: { working: { mine: "A" } } });
    const b = originateView("L2", {
      global: a.view.streams.global,
      cwd: a.view.streams.cwd,
      session: originateView("x").streams.session,
    });
    expect(b.lineage.originStep).toBe(2);
    expect(readTemporalState(b, 0, "global").state.working).toEqual({ from: "A2" });
    expect(readTemporalState(b, 0, "session").state.working).toEqual({});
    expect(code(() => readTemporalState(b, 1))).toBe("offset-unavailable");
    const next = stageCohort(b, parsePatchSet({ global: { working: { from: "B3" } } }).patches, "B3").view;
    expect(next.streams.global.tail.map((r) => `${r.lineage}:${r.id}:${r.step}`)).toEqual([
      "L1:T1:1",
      "L1:T2:2",
      "L2:B3:3",
    ]);
    expect(readTemporalState(next, 1, "global").state.working).toEqual({ from: "A2" });
  });

  it("a foreign record after this lineage's origin is refused, naming the scope", () => {
    const a = new Harness();
    a.patch({ global: { working: { v: 1 } } });
    const b = originateView("L2", a.view.streams);
    a.patch({ global: { working: { v: 2 } } });
    expect(() => assertStreamInLineage(a.view.streams.global, b.lineage)).toThrow(
      /global: record T2 belongs to lineage L1 and follows this lineage's origin/,
    );
  });

  it("a stream claiming a transition the lineage does not hold is refused", () => {
    const h = new Harness();
    h.patch({ session: { working: { v: 1 } } });
    const forged = structuredClone(h.view.streams.session);
    forged.tail[0]!.id = "T-other";
    expect(code(() => createView(h.view.lineage, { ...h.view.streams, session: forged }))).toBe("invalid-lineage");
  });
});

describe("recentTransitions", () => {
  it("lists at most seven transitions, newest first, with changed paths per scope", () => {
    const h = new Harness();
    for (let i = 1; i <= 9; i++)
      h.patch({
        session: { working: { [`k${i}`]: i } },
        ...(i === 9 ? { cwd: { contract: { lang: "ts", old: null } } } : {}),
      });
    const recent = recentTransitions(h.view);
    expect(recent).toHaveLength(7);
    expect(recent.map((t) => t.id)).toEqual(["T9", "T8", "T7", "T6", "T5", "T4", "T3"]);
    expect(recent[0]!.changes).toEqual({ cwd: ["contract.lang"], session: ["working.k9"] });
    expect(recent.every((t) => t.changes.session!.length === 1)).toBe(true);
  });
});
