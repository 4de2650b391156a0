// History lines: per boundary its offset, short id, step, time (when known) and the keys each scope
// added, changed or removed against the next older boundary; the oldest line says why it lists no
// changes when its older boundary was not read, and the last line where the history ends.
import { describe, expect, it } from "vitest";
import type { BoundaryRecord } from "../../runtime/boundaries.ts";
import { changeSummary, renderHistory, when } from "../../runtime/history.ts";
import { emptyScopeState, type ScopeState } from "../../storage/core/scope-state.ts";

function record(id: string, step: number, offset: number | null, session: Partial<ScopeState> = {}): BoundaryRecord {
  const empty = emptyScopeState();
  return {
    id,
    step,
    lineage: "l-00000000-origin",
    offset,
    at: null,
    states: { global: empty, cwd: empty, session: { ...empty, ...session } },
  };
}

describe("history", () => {
  it("summarizes what each scope changed, two levels deep, and whether the response changed", () => {
    const older = record("t-1", 1, 1, { working: { plan: { a: 1 }, old: 1 }, response: "a" });
    const newer = record("t-2", 2, 0, { working: { plan: { a: 2 }, next: 1 }, response: "b" });
    expect(changeSummary(newer, older, "effective")).toBe(
      "session: +working.next ~working.plan -working.old, response changed",
    );
    expect(changeSummary(newer, older, "cwd")).toBe("no change in this scope");
  });

  it("lists newest first and ends with the reason given; the origin and an unread older boundary say so", () => {
    const origin = { ...record("l-00000000-origin", 0, 2), lineage: "l-00000000-origin" };
    const first = { ...record("t-aaaaaaaa-1", 1, 1, { working: { a: 1 } }), at: "2026-12-03T21:07:25.123Z" };
    const second = record("t-bbbbbbbb-2", 2, 0, { working: { a: 1, b: 2 } });
    const text = renderHistory({
      scope: "effective",
      title: "the hot window (offsets 0–2)",
      records: [second, first, origin],
      older: null,
      end: "History starts at step 0.",
      oldestNote: "unused",
    });
    expect(text.split("\n")).toEqual([
      "State Flow history — the hot window (offsets 0–2), newest first; scope effective",
      "offset  transition  step  when (UTC)  changes against the next older boundary (+ added, ~ changed, - removed)",
      " 0  t-bbbbbbbb  step 2  session: +working.b",
      " 1  t-aaaaaaaa  step 1  2026-12-03 21:07:25  session: +working.a",
      " 2  l-00000000  step 0  origin: State Flow started this line of history here",
      "History starts at step 0.",
    ]);
    const cut = renderHistory({
      scope: "session",
      title: "t",
      records: [second],
      older: null,
      end: "end",
      oldestNote: "changes not shown: not kept",
    });
    expect(cut).toContain(" 0  t-bbbbbbbb  step 2  changes not shown: not kept");
  });

  it("says when steps between two listed boundaries were not recorded on the branch", () => {
    const text = renderHistory({
      scope: "effective",
      title: "t",
      records: [record("t-cccccccc", 5, null, { working: { x: 1 } })],
      older: record("t-dddddddd", 2, null),
      end: "end",
      oldestNote: "",
    });
    expect(text).toContain(
      "    t-cccccccc  step 5  session: +working.x (since step 2: steps between were not recorded here)",
    );
    expect(when(null)).toBe("");
  });
});
