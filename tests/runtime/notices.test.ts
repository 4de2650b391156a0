import { describe, expect, it } from "vitest";
import { NOTICES, legacyMigratedNotice, legacySkillsNotice } from "../../runtime/notices.ts";

describe("episode notices", () => {
  it("every error and warning says what to do next (or points at the error that does)", () => {
    for (const [code, { text, level }] of Object.entries(NOTICES)) {
      if (level === "info") continue;
      expect(text, code).toMatch(
        /\/tree|\/state-flow-start|\/state-flow-stop|retry|Retry|Fix the cause|see the previous error/,
      );
    }
  });
});

describe("legacy migration notices", () => {
  it("name the migrated scopes and revision", () => {
    expect(legacyMigratedNotice({ scopes: ["global", "cwd"], revision: "abc" })).toBe(
      "State Flow migrated the legacy state.json of the global, cwd scope(s) into checkpoints with an empty tail " +
        "(revision abc); the state is unchanged and state.json is gone.",
    );
  });

  it("name moved, unverified and dropped Skill compilations", () => {
    const text = legacySkillsNotice([
      { path: "/a/SKILL.md", to: "cwd", verified: true, superseded: false },
      { path: "/b/SKILL.md", to: "global", verified: false, superseded: false },
      { path: "/c/SKILL.md", to: "cwd", verified: true, superseded: true },
    ]);
    expect(text).toContain("moved 2 legacy Skill compilation(s)");
    expect(text).toContain("(/a/SKILL.md → cwd, /b/SKILL.md → global)");
    expect(text).toContain("Unverified (source unreadable): /b/SKILL.md.");
    expect(text).toContain("Dropped, a Skill artifact already held them: /c/SKILL.md.");
  });
});
