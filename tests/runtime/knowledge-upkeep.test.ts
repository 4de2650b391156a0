// The Knowledge upkeep of a branch over a real store: before a run has discovered anything it says
// so (never a falsely clean list); a run's discovery names a new source; a read of a path while no
// branch is bound obliges nothing.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StateFlowError } from "../../storage/core/errors.ts";
import { runtimeParts, type Parts } from "../support/runtime-parts.ts";

let parts: Parts | null = null;
afterEach(() => parts?.dispose());

describe("KnowledgeUpkeep", () => {
  it("says invalidations are unavailable until a run discovered Knowledge", async () => {
    parts = runtimeParts(false);
    await parts.actors.startStorage(false);
    expect(parts.knowledge.invalidations(parts.binding.state!)).toEqual({
      unavailable: "no enabled run has discovered Knowledge yet",
    });
  });

  it("a run's discovery names a source that has no artifact yet", async () => {
    parts = runtimeParts(false);
    await parts.actors.startStorage(false);
    const knowledge = join(parts.root, "..", "knowledge");
    mkdirSync(knowledge, { recursive: true });
    writeFileSync(join(knowledge, "guide.md"), "# Guide\n");
    parts.knowledge.startDiscovery();
    await parts.knowledge.ready();
    const found = parts.knowledge.invalidations(parts.binding.state!);
    expect(Array.isArray(found) ? found.map((i) => i.path) : found).toEqual([join(knowledge, "guide.md")]);
  });

  it("a read while no branch is bound obliges nothing", () => {
    parts = runtimeParts(false);
    parts.knowledge.sourceRead("/nowhere/SKILL.md");
    expect(parts.knowledge.run).toBeNull();
  });

  it("a refresh names a source relative to the root or absolute, also through a symlinked root", async () => {
    parts = runtimeParts(false);
    await parts.actors.startStorage(false);
    const knowledge = join(parts.root, "..", "knowledge");
    mkdirSync(join(knowledge, "nested"), { recursive: true });
    writeFileSync(join(knowledge, "nested", "guide.md"), "# Guide\n");
    const linked = join(parts.root, "..", "linked-knowledge");
    symlinkSync(knowledge, linked);
    const upkeep = parts.knowledge;
    await expect(upkeep.requestRefresh(join(linked, "nested", "gone.md"))).rejects.toThrow(StateFlowError);
    expect(await upkeep.requestRefresh(""), "a refused name changed nothing").toContain("Refresh asked for: none.");
    await upkeep.requestRefresh(join(linked, "nested", "guide.md"));
    expect(await upkeep.requestRefresh("")).toContain("Refresh asked for: nested/guide.md.");
    expect(await upkeep.requestRefresh("nested/guide.md")).toContain("1 Knowledge source(s): nested/guide.md.");
  });
});
