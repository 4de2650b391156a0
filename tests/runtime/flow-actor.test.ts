import { describe, expect, it, vi } from "vitest";
import { fromPromise, waitFor, type InspectionEvent } from "xstate";
import { episodeMachine } from "../../machines/episode.ts";
import { type StartStorageInput } from "../../machines/episode-types.ts";
import { createFlowActor } from "../../runtime/flow-actor.ts";

/** The episode with a store that starts at once (the runtime supplies the real one). */
const startingAtOnce = episodeMachine.provide({
  actors: { startStorage: fromPromise<void, StartStorageInput>(async () => undefined) },
});

describe("createFlowActor", () => {
  it("runs the machine with its input and no observer when inspection is off", () => {
    const actor = createFlowActor(startingAtOnce, { input: { autoStart: true } }).start();
    expect(actor.getSnapshot().context.autoStart).toBe(true);
    actor.stop();
  });
  it("reports the barrier, the storage actor, the spawned run and what it invokes to the sink", async () => {
    const seen: string[] = [];
    const inspect = (e: InspectionEvent) => {
      if (e.type === "@xstate.actor") seen.push((e.actorRef as unknown as { id: string }).id);
    };
    const actor = createFlowActor(startingAtOnce, {
      input: { autoStart: true },
      inspection: { url: "ws://x", inspect: { next: inspect }, stop() {} },
    });
    actor.start();
    actor.send({ type: "SESSION_START", reason: "startup", branch: "empty" });
    await waitFor(actor, (s) => s.matches("active"));
    actor.send({ type: "RUN_ANNOUNCED", trigger: { kind: "prompt", text: "hello" }, toolsMissing: false });
    // (the stand-in check fails at once: discovery, the run's next preparation step, starts after it)
    await vi.waitFor(() => expect(seen).toContain("knowledge"));
    expect(seen).toEqual([actor.id, "barrier", "storage", "run", "resolution", "freshness", "knowledge"]);
    actor.stop();
  });
});
