import { describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { emptyScopeState, type ScopeName, type ScopeState } from "../../storage/core/scope-state.ts";
import { planLegacySkills } from "../../runtime/legacy-skills.ts";

const HASH = `sha256:${"1".repeat(64)}`;
const CURRENT = `sha256:${"2".repeat(64)}`;

function states(contracts: Partial<Record<ScopeName, object>>, artifacts: Partial<Record<ScopeName, object>> = {}) {
  const out = {} as Record<ScopeName, ScopeState>;
  for (const scope of ["global", "cwd", "session"] as const) {
    out[scope] = {
      ...emptyScopeState(),
      contract: { ...contracts[scope] },
      artifacts: { ...artifacts[scope] },
    } as ScopeState;
  }
  return out;
}

const readable = (paths: Record<string, string>) => (path: string) => paths[path] ?? null;

describe("planLegacySkills", () => {
  it("is null when no scope holds the retired store", () => {
    expect(planLegacySkills(states({ cwd: { build: "make" } }), "/p", () => CURRENT)).toBeNull();
  });

  it("moves entries into artifacts with the retired evidence in provenance, never in the artifact", () => {
    const plan = planLegacySkills(
      states({
        cwd: {
          keep: 1,
          compiled_skills: {
            "/p/a/SKILL.md": {
              description: "A's rules",
              routing: "a",
              hash: HASH,
              compiled_at: "2026-02-01T00:00:00Z",
            },
          },
        },
      }),
      "/p",
      readable({ "/p/a/SKILL.md": CURRENT }),
    )!;
    expect(plan.input.cwd).toEqual({
      contract: { compiled_skills: null },
      artifacts: { "/p/a/SKILL.md": { description: "A's rules", kind: "skill", compilation: { routing: "a" } } },
    });
    // The carried hash stays: if the source changed since it was compiled, that stays detectable.
    expect(plan.provenance.cwd).toEqual({
      "/p/a/SKILL.md": { sourceHash: HASH, compilerRevision: "skill-artifact-v1", compiledAt: "2026-02-01T00:00:00Z" },
    });
    expect(plan.migrated).toEqual([
      { path: "/p/a/SKILL.md", from: "cwd", to: "cwd", verified: true, superseded: false },
    ]);
    expect(() => parsePatchSet(plan.input)).not.toThrow();
  });

  it("an unreadable source is unverified; without a carried hash it has none; relative keys hash against cwd", () => {
    const plan = planLegacySkills(
      states({ session: { compiled_skills: { "gone/SKILL.md": { routing: "g" }, "here/SKILL.md": "plain text" } } }),
      "/p",
      readable({ "/p/here/SKILL.md": CURRENT }),
    )!;
    expect(plan.input.session).toEqual({ contract: { compiled_skills: null } });
    expect(Object.keys(plan.input.cwd!.artifacts as object)).toEqual(["gone/SKILL.md", "here/SKILL.md"]);
    expect((plan.input.cwd!.artifacts as Record<string, unknown>)["here/SKILL.md"]).toMatchObject({
      compilation: { compiled: "plain text" },
    });
    expect(plan.provenance.cwd).toEqual({
      "gone/SKILL.md": { compilerRevision: "skill-artifact-v1", unverified: true },
      "here/SKILL.md": { sourceHash: CURRENT, compilerRevision: "skill-artifact-v1" },
    });
    expect(plan.migrated.map((m) => [m.path, m.from, m.to, m.verified])).toEqual([
      ["gone/SKILL.md", "session", "cwd", false],
      ["here/SKILL.md", "session", "cwd", true],
    ]);
  });

  it("global entries stay global; a complete Skill artifact at the path wins over the retired entry", () => {
    const complete = { description: "d", kind: "skill", compilation: { x: 1 } };
    const plan = planLegacySkills(
      states(
        {
          global: { compiled_skills: { "/u/SKILL.md": { r: 1 } } },
          cwd: { compiled_skills: { "/p/SKILL.md": { r: 2 } } },
          session: { compiled_skills: { "/p/SKILL.md": { r: 3 }, "/q/SKILL.md": { r: 4 } } },
        },
        { cwd: { "/q/SKILL.md": complete } },
      ),
      "/p",
      () => CURRENT,
    )!;
    expect(Object.keys(plan.input.global!.artifacts as object)).toEqual(["/u/SKILL.md"]);
    expect(plan.input.cwd!.artifacts).toEqual({
      "/p/SKILL.md": { description: expect.any(String), kind: "skill", compilation: { r: 2 } },
    });
    expect(plan.migrated.filter((m) => m.superseded).map((m) => m.path)).toEqual(["/p/SKILL.md", "/q/SKILL.md"]);
    expect(Object.keys(plan.provenance.cwd!)).toEqual(["/p/SKILL.md"]);
  });
});
