import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import {
  branchBarrier,
  branchPublication,
  episodeStateName,
  isToolsActive,
  loadedBranch,
  mayInitializeStorage,
  openRun,
  projectionMode,
  retainedPointer,
} from "../../machines/episode-queries.ts";
import { publicationMachine } from "../../machines/publication.ts";
import { episodeWithPendingActors } from "../support/episode-stubs.ts";
import { RUN_ANNOUNCED, STORAGE_READY } from "../support/alphabets.ts";

describe("episode queries", () => {
  it("answer from the snapshot: tools, projection, name, barrier, run, publication, loaded branch", () => {
    const actor = createActor(episodeWithPendingActors, { input: { autoStart: false } }).start();
    const s = () => actor.getSnapshot();
    expect(branchBarrier(s()).getSnapshot().value, "the barrier lives from the start").toBe("idle");
    actor.send({ type: "SESSION_START", reason: "startup", branch: "empty", identity: { sessionId: "s" } });
    expect([episodeStateName(s()), projectionMode(s()), isToolsActive(s())]).toEqual(["off", "ordinary", false]);
    actor.send({ type: "START" });
    expect(mayInitializeStorage(s())).toBe(true);
    actor.send(STORAGE_READY);
    expect(episodeStateName(s())).toBe("active.bootstrap.fromTranscript");
    expect([projectionMode(s()), isToolsActive(s()), retainedPointer(s())]).toEqual([
      "bootstrapTranscript",
      true,
      null,
    ]);
    const loaded = { revision: "r1" };
    actor.send({ type: "LOADED", state: loaded });
    expect(loadedBranch(s())).toBe(loaded);
    actor.send(RUN_ANNOUNCED);
    expect(openRun(s())?.getSnapshot().context.equipped).toBe(true);
    const input = { policy: "turn-end", backend: "file", remote: false } as const;
    actor.send({ type: "PUBLICATION_OPENED", logic: publicationMachine, input });
    expect(branchPublication(s())?.getSnapshot().value, "the generation's publication is a child").toBe("fileOnly");
    actor.send({ type: "PUBLICATION_OPENED", logic: publicationMachine, input });
    expect(Object.keys(s().children).filter((id) => id === "publication")).toHaveLength(1);
    actor.stop();
  });
});
