// Stability per path from the temporal view: what the retained transitions changed (down to four
// keys), what the run changed since, and the split of state[0] along those paths.
import { describe, expect, it } from "vitest";
import { addChanged, recentlyChanged, splitState, trieOf } from "../../../adapters/pi/stability.ts";
import { parsePatchSet, stageCohort } from "../../../storage/core/cohort.ts";
import { emptyScopeState } from "../../../storage/core/scope-state.ts";
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
