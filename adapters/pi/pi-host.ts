// The values State Flow takes from the Pi that loaded it: its version, its agent directory, how it
// lists Skills and its TUI text component. The package's modules import only Pi's types; these
// values come in from the loader (state-flow.ts, index.ts), so a build of State Flow that Node loads
// itself runs with the Pi that loaded it and never loads a second Pi from the checkout's node_modules.

import type { Component } from "@earendil-works/pi-tui";
import type { FormatSkills } from "./skill-listing.ts";

/** Pi's TUI text component (pi-tui `Text`), drawn for a patch_state result. */
export type TextComponent = new (text: string, paddingX: number, paddingY: number) => Component;

export interface PiHost {
  /** The running Pi's version (`VERSION`). */
  readonly version: string;
  /** The running Pi's agent directory (`getAgentDir()`: PI_CODING_AGENT_DIR or ~/.pi/agent). */
  readonly agentDir: () => string;
  /** Absent where this Pi does not export it: the listing is then left as Pi renders it. */
  readonly formatSkills: FormatSkills | undefined;
  readonly Text: TextComponent;
}

/** The host from Pi's coding-agent and TUI modules, as the loader imported them. */
export function piHostOf(
  codingAgent: { readonly VERSION: string; readonly getAgentDir: () => string },
  tui: { readonly Text: TextComponent },
): PiHost {
  const format = (codingAgent as { formatSkillsForPrompt?: unknown }).formatSkillsForPrompt;
  return {
    version: codingAgent.VERSION,
    agentDir: codingAgent.getAgentDir,
    formatSkills: typeof format === "function" ? (format as FormatSkills) : undefined,
    Text: tui.Text,
  };
}
