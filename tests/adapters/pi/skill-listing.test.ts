// The package's Skill is listed only where Pi shows a skill listing anyway: removed when it would
// be the whole listing, kept beside other Skills; computed with Pi's own formatter, so a prompt
// this Pi did not build that way is left as it is.
import { formatSkillsForPrompt, type Skill } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { MEMORY_SKILL, withoutLoneSkillListing } from "../../../adapters/pi/skill-listing.ts";

const skill = (name: string, disableModelInvocation = false) =>
  ({ name, description: `${name} things`, filePath: `/p/${name}/SKILL.md`, disableModelInvocation }) as Skill;

const format = formatSkillsForPrompt as (skills: readonly { name: string }[]) => string;
const prompt = (skills: Skill[]) => `Base prompt.${formatSkillsForPrompt(skills)}\nCurrent working directory: /w`;

describe("withoutLoneSkillListing", () => {
  it("removes the listing when State Flow's Skill is all it lists", () => {
    const skills = [skill(MEMORY_SKILL), skill("hidden", true)];
    expect(withoutLoneSkillListing(prompt(skills), skills, format)).toBe("Base prompt.\nCurrent working directory: /w");
  });

  it("keeps it beside another listed Skill, without Skills, and where the prompt holds no such listing", () => {
    const both = [skill(MEMORY_SKILL), skill("house-style")];
    expect(withoutLoneSkillListing(prompt(both), both, format)).toBe(prompt(both));
    expect(withoutLoneSkillListing(prompt([]), [], format)).toBe(prompt([]));
    expect(withoutLoneSkillListing(prompt([]), undefined, format)).toBe(prompt([]));
    const alone = [skill(MEMORY_SKILL)];
    expect(withoutLoneSkillListing("A custom prompt.", alone, format)).toBe("A custom prompt.");
    expect(withoutLoneSkillListing(prompt([skill("other")]), [skill("other")], format)).toBe(prompt([skill("other")]));
  });

  it("leaves the listing alone where this Pi does not say how it renders one", () => {
    const alone = [skill(MEMORY_SKILL)];
    expect(withoutLoneSkillListing(prompt(alone), alone, undefined)).toBe(prompt(alone));
  });
});
