// The host is what State Flow takes from the Pi that loaded it; built from Pi's own modules it
// carries that Pi's values, and a Pi without a skill formatter leaves the listing alone.
import * as codingAgent from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";
import { describe, expect, it } from "vitest";
import { piHostOf } from "../../../adapters/pi/pi-host.ts";

describe("piHostOf", () => {
  it("carries the running Pi's version, agent directory, skill formatter and Text", () => {
    const host = piHostOf(codingAgent, { Text });
    expect(host.version).toBe(codingAgent.VERSION);
    expect(host.agentDir()).toBe(codingAgent.getAgentDir());
    expect(host.formatSkills).toBe((codingAgent as { formatSkillsForPrompt?: unknown }).formatSkillsForPrompt);
    expect(typeof host.formatSkills).toBe("function");
    expect(new host.Text("hello", 0, 0).render(20).join("")).toContain("hello");
  });

  it("names no formatter where this Pi exports none", () => {
    const host = piHostOf({ VERSION: "0.0.1", getAgentDir: () => "/a" }, { Text });
    expect(host.formatSkills).toBeUndefined();
    expect(host.agentDir()).toBe("/a");
  });
});
