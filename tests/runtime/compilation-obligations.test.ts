import { describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { StateFlowError } from "../../storage/core/errors.ts";
import {
  compilationRequired,
  provenanceOf,
  replacingSkillArtifacts,
  unmetObligations,
} from "../../runtime/compilation-obligations.ts";

const a = { scope: "global" as const, path: "/k/a.md", hash: `sha256:${"a".repeat(64)}`, reason: "new" };
const b = { scope: "global" as const, path: "/k/b.md", hash: `sha256:${"b".repeat(64)}`, reason: "changed" };

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
    expect(error.message).toContain("You read /k/a.md (new), /k/b.md (changed): a source listed under Artifact");
    expect(error.message).toContain('{"global":{"artifacts":{"/k/a.md":{"description":"<what it holds');
    expect(error.message).toContain("nothing was written");
  });

  it("records the observed hash, artifact-v1 and the compile time", () => {
    expect(provenanceOf([a], new Date("2026-12-01T10:00:00.000Z"))).toEqual({
      global: {
        "/k/a.md": { sourceHash: a.hash, compilerRevision: "artifact-v1", compiledAt: "2026-12-01T10:00:00.000Z" },
      },
    });
  });

  it("a Skill needs a cwd artifact with kind skill and a non-empty compilation; unhashed bytes are re-read", () => {
    const skill = { scope: "cwd" as const, path: "/p/SKILL.md", hash: a.hash, reason: "skill" };
    const entry = (e: object) => parsePatchSet({ cwd: { artifacts: { "/p/SKILL.md": e } } });
    expect(unmetObligations([skill], entry({ description: "d" }))).toEqual([skill]);
    expect(unmetObligations([skill], entry({ description: "d", kind: "skill", compilation: {} }))).toEqual([skill]);
    expect(unmetObligations([skill], entry({ description: "d", kind: "skill", compilation: { a: 1 } }))).toEqual([]);
    expect(compilationRequired([skill]).message).toContain('a Skill read needs a cwd artifact with kind "skill"');
    expect(provenanceOf([skill], new Date(0)).cwd?.["/p/SKILL.md"]?.compilerRevision).toBe("skill-artifact-v1");
    const unhashed = { ...skill, hash: null };
    expect(unmetObligations([unhashed], entry({ description: "d", kind: "skill", compilation: { a: 1 } }))).toEqual([
      unhashed,
    ]);
    expect(compilationRequired([unhashed]).message).toMatch(/could not be hashed after your read.*read it again/);
  });

  it("a Skill's refresh replaces its whole old artifact (nulls for the fields it drops)", () => {
    const skill = { scope: "cwd" as const, path: "/p/SKILL.md", hash: a.hash, reason: "skill" };
    const set = parsePatchSet({
      cwd: { artifacts: { "/p/SKILL.md": { description: "v2", kind: "skill", compilation: { b: 1 } } } },
    });
    const old = { "/p/SKILL.md": { description: "v1", kind: "skill", compilation: { a: 1 }, tags: ["x"] } };
    expect(replacingSkillArtifacts(set, [skill], () => old).patches.cwd?.artifacts).toEqual({
      "/p/SKILL.md": { description: "v2", kind: "skill", compilation: { a: null, b: 1 }, tags: null },
    });
    expect(
      replacingSkillArtifacts(set, [a], () => old),
      "not a Skill: the patch as sent",
    ).toBe(set);
  });
});
