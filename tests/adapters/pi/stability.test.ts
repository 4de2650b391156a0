// Stability per path from the temporal view: what the retained transitions changed (down to four
// keys), what the run changed since, and the split of state[0] along those paths.
import { describe, expect, it } from "vitest";
import { addChanged, partitionAtRunStart, partitionInRun, pathsOf } from "../../../adapters/pi/stability.ts";
import { recentAtRunStart, recentlyChanged, splitState, trieOf } from "../../../adapters/pi/stability.ts";
import { parsePatchSet, stageCohort } from "../../../storage/core/cohort.ts";
import type { JsonObject } from "../../../storage/core/json.ts";
import { emptyScopeState, type ScopeState } from "../../../storage/core/scope-state.ts";
import { originateView, readTemporalState, type TemporalView } from "../../../storage/core/temporal.ts";

function patch(view: TemporalView, set: Record<string, unknown>, id: string): TemporalView {
  return stageCohort(view, parsePatchSet(set).patches, id).view;
}

describe("stability of state[0]'s paths", () => {
  it("an old value stays stable while its neighbour changes every transition; a note is its own path", () => {
    let view = originateView("L");
    view = patch(
      view,
      { cwd: { contract: { big: "b".repeat(100) } }, session: { working: { notes: { n0: "a" } } } },
      "T0",
    );
    for (let i = 1; i <= 8; i++)
      view = patch(view, { session: { working: { next: `n${i}`, notes: { [`n${i}`]: "x" } } } }, `T${i}`);
    const volatile = recentlyChanged(view);
    const split = splitState(readTemporalState(view).state, volatile);
    expect(split.stable).toEqual({ contract: { big: "b".repeat(100) }, working: { notes: { n0: "a", n1: "x" } } });
    expect(split.volatile).toEqual({
      working: { next: "n8", notes: { n2: "x", n3: "x", n4: "x", n5: "x", n6: "x", n7: "x", n8: "x" } },
    });
  });

  it("adds the run's own changes, deletions included; deeper changes mark their ancestor at four keys", () => {
    const before = { ...emptyScopeState(), working: { a: 1, b: { c: { d: { e: 1, f: 2 } } } }, contract: { x: 1 } };
    const after = { ...emptyScopeState(), working: { a: 1, b: { c: { d: { e: 9, f: 2 } } } }, contract: {} };
    const trie = trieOf([]);
    addChanged(trie, before, after);
    const split = splitState(after, trie);
    expect(split.stable).toEqual({ working: { a: 1 } });
    expect(split.volatile).toEqual({ working: { b: { c: { d: { e: 9, f: 2 } } } } });
  });

  it("leaves empty fields out and keeps the state's key order in both parts", () => {
    const state = { ...emptyScopeState(), working: { z: 1, y: 2, x: 3 } };
    const split = splitState(state, trieOf([["working", "y"]]));
    expect(Object.keys(split.stable)).toEqual(["working"]);
    expect(Object.keys(split.stable.working as object)).toEqual(["z", "x"]);
    expect(splitState(emptyScopeState(), trieOf([]))).toEqual({ stable: {}, volatile: {} });
  });
});

describe("the partition from run to run (what moves between the parts, and when)", () => {
  const state = (working: JsonObject, contract: JsonObject = {}): ScopeState => ({
    ...emptyScopeState(),
    contract,
    working,
  });
  const facts = { f: "fact ".repeat(200) };

  it("keeps quiet paths volatile until, summed over the runs, they reach half the stable part; then all return", () => {
    const s = state({ a: "x".repeat(100), b: "y".repeat(100) }, facts);
    const recent = trieOf([]);
    let partition = partitionAtRunStart(s, recent, {
      volatile: trieOf([["working", "a"]]),
      owed: 0,
      changed: trieOf([]),
      state: s,
    });
    expect(partition.volatile, "one quiet run: kept").toEqual(trieOf([["working", "a"]]));
    // The quiet path's characters in the volatile part ({"working":{"a":"x…"}} less an empty {}).
    const quiet = JSON.stringify({ working: { a: "x".repeat(100) } }).length - 2;
    expect(partition.owed).toBe(quiet);
    const stable = JSON.stringify(splitState(s, recent).stable).length;
    let runs = 1;
    while (partition.owed > 0) {
      expect(2 * partition.owed, `run ${runs}: not yet half the stable part`).toBeLessThan(stable);
      partition = partitionAtRunStart(s, recent, partition);
      runs++;
    }
    expect(pathsOf(partition.volatile), "returned together").toEqual([]);
    expect(runs, "the run at which the quiet path had cost half the stable part").toBe(Math.ceil(stable / 2 / quiet));
  });

  it("returns a large quiet value at once; a recent volatile path stays volatile whatever its size", () => {
    const s = state({ big: "b".repeat(8192), next: "n" }, facts);
    const previous = {
      volatile: trieOf([
        ["working", "big"],
        ["working", "next"],
      ]),
      owed: 0,
      changed: trieOf([]),
      state: s,
    };
    expect(partitionAtRunStart(s, trieOf([["working", "next"]]), previous)).toEqual({
      volatile: trieOf([["working", "next"]]),
      owed: 0,
      changed: trieOf([]),
      state: s,
    });
    const big = trieOf([["working", "big"]]);
    const still = partitionAtRunStart(s, big, { ...previous, volatile: big });
    expect(pathsOf(still.volatile), "volatile and recent: kept").toEqual([["working", "big"]]);
    const inPlace = partitionAtRunStart(s, big, { ...previous, volatile: trieOf([]) });
    expect(pathsOf(inPlace.volatile), "patched in the stable part by the previous run: stays there").toEqual([]);
    const other = state({ big: "c".repeat(8192), next: "n" }, facts);
    const since = partitionAtRunStart(other, big, { ...previous, volatile: trieOf([]) });
    expect(pathsOf(since.volatile), "changed since by another session: volatile").toEqual([["working", "big"]]);
    expect(partitionAtRunStart(s, trieOf([["working", "big"]]), null).volatile).toEqual(trieOf([["working", "big"]]));
  });

  it("in a run: a changed stable path stays in place, unless the previous run changed it too; the quiet return", () => {
    const before = state({ q: "quiet", r: "recent", s: "stable" }, facts);
    const run = {
      state: before,
      recent: trieOf([["working", "r"]]),
      start: {
        volatile: trieOf([
          ["working", "q"],
          ["working", "r"],
        ]),
        owed: 7,
        changed: trieOf([]),
        state: before,
      },
    };
    const volatileOnly = partitionInRun(run, { ...before, working: { ...before.working, r: "again", n: "new" } });
    expect(pathsOf(volatileOnly.volatile)).toEqual([
      ["working", "q"],
      ["working", "r"],
      ["working", "n"],
    ]);
    expect(volatileOnly.owed, "the quiet ones still owe").toBe(7);
    expect(pathsOf(volatileOnly.changed), "what the run changed, for the next run's start").toEqual([
      ["working", "r"],
      ["working", "n"],
    ]);
    const stableChanged = partitionInRun(run, { ...before, working: { ...before.working, s: "changed", n: "new" } });
    expect(pathsOf(stableChanged.volatile), "s keeps its place in the stable part; q rejoins it").toEqual([
      ["working", "r"],
      ["working", "n"],
    ]);
    expect(splitState(stableChanged.state, stableChanged.volatile).stable).toEqual({
      contract: facts,
      working: { q: "quiet", s: "changed" },
    });
    expect(stableChanged.owed).toBe(0);
    // A stable path the previous run changed (in place, so recent but not volatile) leaves when changed again.
    const twice = {
      ...run,
      recent: trieOf([
        ["working", "r"],
        ["working", "s"],
      ]),
    };
    const again = partitionInRun(twice, { ...before, working: { ...before.working, s: "again" } });
    expect(pathsOf(again.volatile)).toEqual([
      ["working", "r"],
      ["working", "s"],
    ]);
    const deleted = partitionInRun(run, { ...before, contract: {} });
    expect(pathsOf(deleted.volatile), "a deleted stable path just leaves the stable part").toEqual([["working", "r"]]);
    expect(splitState(deleted.state, deleted.volatile).stable).toEqual({ working: { q: "quiet", s: "stable" } });
  });
});

describe("the recently changed paths at a run's start", () => {
  it("are the previous run's changes and any made since; with no previous run, the retained transitions'", () => {
    const before = { ...emptyScopeState(), working: { a: 1, b: 2, c: 3 } };
    const now = { ...before, working: { ...before.working, c: 4 } };
    const previous = { volatile: trieOf([]), owed: 0, changed: trieOf([["working", "a"]]), state: before };
    const window = () => trieOf([["working", "b"]]);
    expect(pathsOf(recentAtRunStart(now, previous, window))).toEqual([
      ["working", "a"],
      ["working", "c"],
    ]);
    expect(pathsOf(recentAtRunStart(now, null, window))).toEqual([["working", "b"]]);
  });
});
