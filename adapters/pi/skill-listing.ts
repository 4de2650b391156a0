// The package's Skill (skills/state-flow-memory, listed by package.json `pi.skills`) in Pi's system
// prompt. Pi lists every loaded Skill, with a preamble, in every request. State Flow's Skill is for
// explicit curation requests only (001, "Optional memory curation"), so it is listed only where
// Pi shows a skill listing anyway, i.e. beside other Skills: where it would be the whole listing,
// State Flow removes that listing (≈ 200 tokens a request) and the Skill stays a command,
// `/skill:state-flow-memory`, which /state-flow-status names when a state grows large.

export const MEMORY_SKILL = "state-flow-memory";

/** What State Flow reads of a Skill Pi loaded (before_agent_start's systemPromptOptions.skills). */
export interface ListedSkill {
  readonly name: string;
  readonly disableModelInvocation?: boolean;
}

/** How the running Pi renders its skill listing (`formatSkillsForPrompt`, passed in by pi-host.ts). */
export type FormatSkills = (skills: readonly ListedSkill[]) => string;

/** Whether State Flow's Skill is the only one Pi would list. */
function loneMemorySkill(skills: readonly ListedSkill[] | undefined): boolean {
  const listed = (skills ?? []).filter((skill) => !skill.disableModelInvocation);
  return listed.length === 1 && listed[0]!.name === MEMORY_SKILL;
}

/**
 * Pi 1.x renders the system prompt from `systemPromptOptions` each time it is read: where State
 * Flow's Skill is all it would list, it is taken out of those options, so the prompt is rendered
 * without the listing. (Pi 0.84 hands over a prompt already rendered: `withoutLoneSkillListing`.)
 */
export function dropLoneSkillOption(options: { skills?: readonly ListedSkill[] } | undefined): void {
  if (!options || !Array.isArray(options.skills) || !loneMemorySkill(options.skills)) return;
  (options as { skills: readonly ListedSkill[] }).skills = options.skills.filter((s) => s.name !== MEMORY_SKILL);
}

/**
 * The system prompt without Pi's skill listing when State Flow's Skill is all it would list; any
 * other prompt unchanged (also when this Pi formats its listing differently or does not say how
 * (`format`, Pi's formatSkillsForPrompt): nothing is guessed).
 */
export function withoutLoneSkillListing(
  systemPrompt: string,
  skills: readonly ListedSkill[] | undefined,
  format: FormatSkills | undefined,
): string {
  if (!format || !loneMemorySkill(skills)) return systemPrompt;
  const listing = format((skills ?? []).filter((skill) => !skill.disableModelInvocation));
  const at = listing === "" ? -1 : systemPrompt.indexOf(listing);
  return at < 0 ? systemPrompt : systemPrompt.slice(0, at) + systemPrompt.slice(at + listing.length);
}
