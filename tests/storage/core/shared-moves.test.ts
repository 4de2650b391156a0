import { describe, expect, it } from "vitest";
import { stageCohort } from "../../../storage/core/cohort.ts";
import { sharedMoves } from "../../../storage/core/shared-moves.ts";
import { originateView, type TemporalView } from "../../../storage/core/temporal.ts";

/** A view after these patches, one transition each (ids t-1, t-2, …). */
function after(view: TemporalView, ...patches: Parameters<typeof stageCohort>[1][]): TemporalView {
  let n = view.lineage.window.length;
  return patches.reduce((v, patch) => stageCohort(v, patch, `t-${++n}`).view, view);
}

describe("sharedMoves", () => {
  const base = after(
    originateView("L"),
    { cwd: { contract: { lang: "go", db: "pg" } } },
    { global: { working: { editor: "vim" } } },
  );

  it("names the paths added, changed and removed per shared scope, the new transitions and the newest", () => {
    const moved = after(
      base,
      { cwd: { contract: { db: "sqlite", cli: "todo" } } },
      { cwd: { contract: { lang: null } }, global: { working: { shell: "zsh" } } },
    );
    expect(sharedMoves(base, moved)).toEqual([
      {
        scope: "global",
        transitions: 1,
        newest: { id: "t-4", step: 4 },
        added: ["working.shell"],
        changed: [],
        removed: [],
      },
      {
        scope: "cwd",
        transitions: 2,
        newest: { id: "t-4", step: 4 },
        added: ["contract.cli"],
        changed: ["contract.db"],
        removed: ["contract.lang"],
      },
    ]);
  });

  it("says nothing of a session change, nor of a scope whose state is unchanged", () => {
    expect(sharedMoves(base, after(base, { session: { working: { x: 1 } } }))).toEqual([]);
    expect(sharedMoves(base, base)).toEqual([]);
  });
});
