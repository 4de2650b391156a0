import { describe, expect, it } from "vitest";
import { planRehydration } from "../../../storage/core/rehydration.ts";

const hash = (c: string) => `sha256:${c.repeat(64)}`;
const sources = new Map([
  ["/k/a.md", { hash: hash("a"), bytes: 1 }],
  ["/k/b.md", { hash: hash("b"), bytes: 2 }],
  ["/k/c.md", { hash: hash("c"), bytes: 3 }],
]);

describe("planRehydration", () => {
  it("binds scope, path, candidate hash and reason; invalidations first, then maintenance not already planned", () => {
    const plan = {
      invalidations: [
        { path: "/k/b.md", reason: "changed" as const },
        { path: "/k/gone.md", reason: "new" as const },
      ],
      removed: [],
      prune: [],
    };
    const maintenance = {
      selected: [
        { path: "/k/c.md", bytes: 3, compiledAt: null },
        { path: "/k/b.md", bytes: 2, compiledAt: null },
      ],
      deferred: [],
    };
    expect(planRehydration(plan, sources, maintenance)).toEqual([
      { scope: "global", path: "/k/b.md", candidateHash: hash("b"), reason: "changed" },
      { scope: "global", path: "/k/c.md", candidateHash: hash("c"), reason: "maintenance" },
    ]);
    expect(planRehydration({ invalidations: [], removed: [], prune: [] }, sources)).toEqual([]);
  });
});
