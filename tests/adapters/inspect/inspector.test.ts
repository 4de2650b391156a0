import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import { fromPromise, waitFor } from "xstate";
import { loadInspection, InspectUrlError, INSPECT_ENV } from "../../../adapters/inspect/inspector.ts";
import { createFlowActor } from "../../../runtime/flow-actor.ts";
import { episodeMachine } from "../../../machines/episode.ts";
import { type StartStorageInput } from "../../../machines/episode-types.ts";

/** The episode with a store that starts at once (the runtime supplies the real one). */
const startingAtOnce = episodeMachine.provide({
  actors: { startStorage: fromPromise<void, StartStorageInput>(async () => undefined) },
});

const source = readFileSync(join(import.meta.dirname, "..", "..", "..", "adapters", "inspect", "inspector.ts"), "utf8");

describe("live inspector", () => {
  it("is off by default at zero cost: no env → no inspection, no static import of the inspector", async () => {
    expect(await loadInspection({})).toBeUndefined();
    expect(await loadInspection({ [INSPECT_ENV]: "  " })).toBeUndefined();
    expect(source).not.toMatch(/^import[^;]*@statelyai\/inspect/m);
    const actor = createFlowActor(startingAtOnce, { input: { autoStart: false } }).start();
    actor.send({ type: "SESSION_START", reason: "startup", branch: "empty" });
    expect(actor.getSnapshot().value).toBe("off");
    actor.stop();
  });

  it("rejects a non-WebSocket URL with a named error", async () => {
    await expect(loadInspection({ [INSPECT_ENV]: "http://127.0.0.1:1" })).rejects.toThrow(InspectUrlError);
    await expect(loadInspection({ [INSPECT_ENV]: "not a url" })).rejects.toThrow(InspectUrlError);
  });

  it("streams actor registration, events and snapshots to a local WebSocket server", async () => {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise<void>((r) => server.once("listening", () => r()));
    const { port } = server.address() as { port: number };
    const received: Array<{ type: string; event?: { type: string }; snapshot?: { value?: unknown } }> = [];
    const done = () =>
      received.some((m) => m.type === "@xstate.actor") &&
      received.some((m) => m.type === "@xstate.event" && m.event?.type === "xstate.done.actor.storage") &&
      received.some(
        (m) =>
          m.type === "@xstate.snapshot" && JSON.stringify(m.snapshot?.value) === JSON.stringify({ active: "steady" }),
      );
    // Settles when the messages that prove it have arrived (no deadline: the test's timeout ends a hang).
    let arrived!: () => void;
    const allArrived = new Promise<void>((resolve) => (arrived = resolve));
    server.on("connection", (socket) =>
      socket.on("message", (data) => {
        received.push(JSON.parse(String(data)));
        if (done()) arrived();
      }),
    );
    const inspection = await loadInspection({ [INSPECT_ENV]: `ws://127.0.0.1:${port}` });
    expect(inspection?.url).toBe(`ws://127.0.0.1:${port}`);
    const actor = createFlowActor(startingAtOnce, { input: { autoStart: true }, inspection }).start();
    actor.send({ type: "SESSION_START", reason: "new", branch: "empty" });
    await waitFor(actor, (s) => s.matches("active"));
    try {
      await allArrived;
      expect(done(), `received: ${received.map((m) => m.type + ":" + (m.event?.type ?? "")).join(", ")}`).toBe(true);
    } finally {
      actor.stop();
      inspection?.stop();
      for (const c of server.clients) c.terminate();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
