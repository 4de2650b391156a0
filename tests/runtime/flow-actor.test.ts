import { describe, expect, it } from "vitest";
import type { InspectionEvent } from "xstate";
import { episodeMachine } from "../../machines/episode.ts";
import { createFlowActor } from "../../runtime/flow-actor.ts";

describe("createFlowActor", () => {
  it("runs the machine with its input and no observer when inspection is off", () => {
    const actor = createFlowActor(episodeMachine, { input: { autoStart: true } }).start();
    expect(actor.getSnapshot().context.autoStart).toBe(true);
    actor.stop();
  });
  it("reports the spawned resolution actor to the inspection sink too", () => {
    const seen: string[] = [];
    const inspect = (e: InspectionEvent) => {
      if (e.type === "@xstate.actor") seen.push((e.actorRef as unknown as { logic: { id: string } }).logic.id);
    };
    const actor = createFlowActor(episodeMachine, {
      input: { autoStart: true },
      inspection: { url: "ws://x", inspect: { next: inspect }, stop() {} },
    });
    actor.start();
    actor.send({ type: "SESSION_START", reason: "startup", branch: "empty" });
    actor.send({ type: "STORAGE_READY" });
    actor.send({ type: "RUN_STARTED" });
    expect(seen).toEqual(["episode", "resolution"]);
    actor.stop();
  });
});
