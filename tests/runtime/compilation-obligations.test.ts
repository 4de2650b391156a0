import { describe, expect, it } from "vitest";
import { parsePatchSet } from "../../core/cohort.ts";
import { StateFlowError } from "../../core/errors.ts";
import { compilationRequired, provenanceOf, unmetObligations } from "../../runtime/compilation-obligations.ts";

const a = { path: "/k/a.md", hash: `sha256:${"a".repeat(64)}`, reason: "new" };
const b = { path: "/k/b.md", hash: `sha256:${"b".repeat(64)}`, reason: "changed" };

describe("compilation obligations", () => {
  it("a patch meets an obligation only with a global artifact object at the exact path", () => {
    const compiled = parsePatchSet({ global: { artifacts: { "/k/a.md": { description: "A" } } } });
    expect(unmetObligations([a, b], compiled)).toEqual([b]);
    expect(unmetObligations([a], parsePatchSet({ final: true }))).toEqual([a]);
    expect(unmetObligations([a], parsePatchSet({ cwd: { artifacts: { "/k/a.md": { description: "A" } } } }))).toEqual([
      a,
    ]);
    expect(unmetObligations([a], parsePatchSet({ global: { artifacts: { "/k/a.md": null } } }))).toEqual([a]);
    expect(unmetObligations([], parsePatchSet({ final: true }))).toEqual([]);
  });

  it("the refusal is named and shows the exact patch to add", () => {
    const error = compilationRequired([a, b]);
    expect(error).toBeInstanceOf(StateFlowError);
    expect(error.code).toBe("compilation-required");
    expect(error.message).toContain("You read /k/a.md (new), /k/b.md (changed), listed under Artifact invalidations");
    expect(error.message).toContain('{"global":{"artifacts":{"/k/a.md":{"description":"<what it holds');
    expect(error.message).toContain("nothing was written");
  });

  it("records the observed hash, artifact-v1 and the compile time", () => {
    expect(provenanceOf([a], new Date("2026-12-01T10:00:00.000Z"))).toEqual({
      "/k/a.md": { sourceHash: a.hash, compilerRevision: "artifact-v1", compiledAt: "2026-12-01T10:00:00.000Z" },
    });
  });
});
