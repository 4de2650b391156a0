// The binding records every new revision on the branch and hands it to publication exactly once;
// an unchanged revision records nothing. Real stores, file-only and Git.
import { afterEach, describe, expect, it } from "vitest";
import { parsePatchSet } from "../../storage/core/cohort.ts";
import { runtimeParts, type Parts } from "../support/runtime-parts.ts";

let parts: Parts | null = null;
afterEach(() => parts?.dispose());

for (const git of [false, true]) {
  describe(`BranchBinding (${git ? "Git" : "file-only"})`, () => {
    it("accept records a new revision once, tells of it, and ignores the same revision again", async () => {
      parts = runtimeParts(git);
      const { binding, host, revisions } = parts;
      await parts.actors.startStorage(false);
      const started = host.recordedRevisions().size;
      expect(started).toBe(1);
      const { patches } = parsePatchSet({ session: { working: { k: 1 } } });
      const { runtime } = await binding.store!.commit(binding.state!, patches, "test");
      await binding.accept(runtime);
      await binding.accept(runtime);
      expect(host.recordedRevisions().size).toBe(2);
      expect(revisions.count).toBe(2);
      expect(binding.read(0, "session").state.working).toEqual({ k: 1 });
    });

    it("read before anything is bound names why", () => {
      parts = runtimeParts(git);
      expect(() => parts!.binding.read(0, "effective")).toThrow(/no State Flow runtime is selected/);
    });

    it("a file-only store is adoptable into Git only while git is installed", async () => {
      parts = runtimeParts(git);
      await parts.actors.startStorage(false);
      expect(parts.binding.gitAdoptable()).toBe(false);
    });
  });
}
