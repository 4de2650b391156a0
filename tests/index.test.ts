import { describe, expect, it } from "vitest";
import stateFlow, {
  createStateFlowExtension,
  planArtifactMaintenance,
  readTemporalState,
  selectArtifactsByTags,
} from "../index.ts";
import pkg from "../package.json" with { type: "json" };

describe("package entry", () => {
  it("is what Pi's manifest loads: a default extension factory, plus the public API", () => {
    expect(pkg.pi.extensions).toEqual(["./adapters/pi/state-flow.ts"]);
    expect(typeof stateFlow).toBe("function");
    expect(typeof createStateFlowExtension({ agentDir: "/nonexistent" })).toBe("function");
    expect(typeof readTemporalState).toBe("function");
    expect(typeof selectArtifactsByTags).toBe("function");
    expect(typeof planArtifactMaintenance).toBe("function");
  });

  it('declares Pi\'s packages as peers with "*" (Pi provides them), pinned for development', () => {
    for (const name of ["pi-coding-agent", "pi-ai", "pi-agent-core", "pi-tui"] as const) {
      expect(pkg.peerDependencies[`@earendil-works/${name}`], name).toBe("*");
    }
    expect(pkg.devDependencies["@earendil-works/pi-coding-agent"]).toBe("0.84.4");
    expect(pkg.devDependencies.node).toBe("22.23.3");
    expect(pkg.allowScripts.node).toBe(true);
  });
});
