// The three commands' arguments and refusals over a pure view (no store: nothing older than the
// hot window can be read, as in a file-only store): each refusal names what was wrong and what to
// type, and each mode without a state says why and how to start.
import { describe, expect, it } from "vitest";
import { diff, forkTarget, history, show, type InspectSource } from "../../runtime/inspect.ts";
import { applyTransition, originateView, type TemporalView } from "../../storage/core/temporal.ts";
import type { BranchState } from "../../storage/state-store.ts";

/** A view with `n` transitions, each adding working.k<i> to the session scope. */
function view(n: number): TemporalView {
  let v = originateView("l-0123456789abcdef");
  for (let i = 1; i <= n; i++)
    v = applyTransition(v, { session: { working: { [`k${i}`]: i } } }, `t-${i}abcdef0${i}`).view;
  return v;
}

function source(overrides: Partial<InspectSource> = {}): InspectSource {
  // Only the view is read from a loaded branch here; the store is absent (no older boundary can be read).
  const state = { view: view(3) } as BranchState;
  return { mode: "active", state, store: null, recorded: [], unavailable: null, ...overrides };
}

describe("inspect commands", () => {
  it("without a state: off says how to start; unavailable and stopped say why", async () => {
    const off = await show(source({ mode: "ordinary", state: null }), "");
    expect(off).toEqual({
      refused: true,
      text:
        "State Flow is off on this branch (never started here): there is no state to show. " +
        "/state-flow-start turns it on.",
    });
    const closed = await history(
      source({ mode: "failedClosed", state: null, unavailable: "revision x is missing" }),
      "",
    );
    expect(closed.text).toContain("could not be proven (revision x is missing)");
    const stopped = await diff(source({ mode: "passive", state: null }), "1 0");
    expect(stopped.text).toContain("State Flow is stopped on this branch and this session holds no state for it");
    const kept = await show(source({ mode: "passive" }), "session");
    expect(kept.text.split("\n")[1]).toContain("this is the state kept at the stop");
  });

  it("show reads a scope, an offset or id, and a path", async () => {
    const head = await show(source(), "");
    expect(head.text.split("\n")[0]).toBe("State Flow state — scope effective, offset 0 — step 3 (t-3abcdef0)");
    const byId = await show(source(), "session t-2abcde working.k2");
    expect(byId.text).toBe("State Flow state — scope session, offset 1 — step 2 (t-2abcdef0)\nworking.k2 — 1 char:\n2");
    const missing = await show(source(), "session 1 k2");
    expect(missing.text).toContain('"k2" is not a scope, an offset 0–7, a transition id or a field of the state');
  });

  it("refuses bad arguments by name", async () => {
    const cases: [() => ReturnType<typeof show>, string][] = [
      [() => show(source(), "session 8"), "Offset 8 is outside the hot window (offsets 0–7)"],
      [() => show(source(), "session 5"), "Offset 5 does not exist yet on this branch: only offsets 0–3 do"],
      [() => show(source(), "2abc"), '"2abc" is not an offset or a transition id: give an offset 0–7 or at least 6'],
      [() => show(source(), "t-ffffffff"), "No boundary t-ffffffff in the hot window, and this store is file-only"],
      [() => history(source(), "--page 0"), '--page needs a page number 1, 2, …, not "0"'],
      [() => history(source(), "cwd --fast"), '/state-flow-history does not know "--fast"'],
      [() => diff(source(), "1"), '/state-flow-diff needs two boundaries, got "1"'],
      [() => diff(source(), ""), "/state-flow-diff needs two boundaries, got none"],
    ];
    for (const [run, says] of cases) {
      const answer = await run();
      expect(answer.refused, says).toBe(true);
      expect(answer.text).toContain(says);
    }
  });

  it("history and diff over the hot window", async () => {
    const h = await history(source(), "session");
    expect(h.text.split("\n").slice(2)).toEqual([
      " 0  t-3abcdef0  step 3  session: +working.k3",
      " 1  t-2abcdef0  step 2  session: +working.k2",
      " 2  t-1abcdef0  step 1  session: +working.k1",
      " 3  l-01234567  step 0  origin: State Flow started this line of history here",
      "History starts at step 0: State Flow started this line of history there.",
    ]);
    const d = await diff(source(), "3 t-3abcde session");
    expect(d.text.split("\n").slice(3)).toEqual([
      "added (3):",
      "  + working.k1: 1",
      "  + working.k2: 2",
      "  + working.k3: 3",
    ]);
  });

  it("/state-flow-fork's boundary: an offset or id of an enabled branch, else a refusal saying why", async () => {
    expect(await forkTarget(source(), "1")).toEqual({ boundary: { id: "t-2abcdef02", step: 2 } });
    expect(await forkTarget(source(), "t-1abcde")).toEqual({ boundary: { id: "t-1abcdef01", step: 1 } });
    const none = await forkTarget(source(), "");
    expect(none).toEqual({ refusal: expect.stringContaining("/state-flow-fork needs one boundary, got none") });
    const beyond = await forkTarget(source(), "5");
    expect(beyond).toEqual({ refusal: expect.stringContaining("Offset 5 does not exist yet on this branch") });
    const stopped = await forkTarget(source({ mode: "passive" }), "0");
    expect(stopped).toEqual({ refusal: expect.stringContaining("a fork of a stopped branch stays off") });
    const off = await forkTarget(source({ mode: "ordinary", state: null }), "0");
    expect(off).toEqual({ refusal: expect.stringContaining("/state-flow-start turns it on") });
  });
});
