// The episode's actors over real stores: start, stop and the frozen restart, restore, adoption
// into Git; a failure rejects (the machine draws that edge) and leaves the binding as it was.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runtimeParts, type Parts } from "../support/runtime-parts.ts";

let parts: Parts | null = null;
afterEach(() => parts?.dispose());

for (const git of [false, true]) {
  describe(`EpisodeActors (${git ? "Git" : "file-only"})`, () => {
    it("start binds an enabled origin; stop publishes the disabled config; the frozen restart resumes it", async () => {
      parts = runtimeParts(git);
      const { actors, binding, host } = parts;
      await actors.startStorage(false);
      expect(binding.state!.config.enabled).toBe(true);
      await actors.persistStop();
      expect(binding.state!.config.enabled).toBe(false);
      expect(host.notices.at(-1)?.message).toMatch(/State Flow stopped/);
      actors.freezeHandoff();
      expect(host.entries.at(-1)).toEqual({ checkpoint: { disabled: true } });
      const stopped = binding.state!.pointer.revision;
      await actors.startStorage(true);
      expect(binding.state!.config.enabled).toBe(true);
      expect(host.recordedRevisions().has(stopped)).toBe(true);
    });

    it("selectRestore restores the branch's newest revision", async () => {
      parts = runtimeParts(git);
      const { actors, binding } = parts;
      await actors.startStorage(false);
      const revision = binding.state!.pointer.revision;
      binding.state = null;
      expect(await actors.selectRestore()).toMatchObject({ kind: "revision", revision });
      expect(binding.state!.pointer.revision).toBe(revision);
    });

    it("a store that cannot be opened rejects, and nothing is bound", async () => {
      parts = runtimeParts(git);
      mkdirSync(join(parts.root, ".."), { recursive: true });
      writeFileSync(parts.root, "not a directory");
      await expect(parts.actors.startStorage(false)).rejects.toThrow();
      expect(parts.binding.state).toBeNull();
      // (restoring from it binds nothing either: a Git store's read fails, a file-only one finds no branch)
      await parts.actors.selectRestore().catch(() => undefined);
      expect(parts.binding.state).toBeNull();
    });

    it("persistStop without a bound branch rejects by name", async () => {
      parts = runtimeParts(git);
      await expect(parts.actors.persistStop()).rejects.toThrow(/no runtime is selected/);
    });
  });
}
