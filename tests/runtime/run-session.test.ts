// One run of a branch without Pi: a run on a branch that is not enabled is ordinary Pi; the
// specification follows the prompt and the messages added inside the run; the response commit
// writes the answer, and the same answer again is accepted as it is. Real file-only store.
import { afterEach, describe, expect, it } from "vitest";
import { createActor, fromPromise } from "xstate";
import { episodeMachine } from "../../machines/episode.ts";
import { Diagnostics } from "../../runtime/diagnostics.ts";
import { RunSession } from "../../runtime/run-session.ts";
import { runtimeParts, type Parts } from "../support/runtime-parts.ts";

let parts: Parts | null = null;
afterEach(() => parts?.dispose());

function session(p: Parts) {
  const machine = episodeMachine.provide({
    actors: { startStorage: fromPromise(({ input }) => p.actors.startStorage(input.fromFrozen)) },
  });
  const episode = createActor(machine, { input: { autoStart: true } }).start();
  const diagnostics = new Diagnostics(p.root, false, p.root, () => undefined);
  return { episode, run: new RunSession(() => episode, p.binding, p.knowledge, p.host, diagnostics) };
}

async function active(episode: ReturnType<typeof session>["episode"]): Promise<void> {
  episode.send({ type: "SESSION_START", reason: "startup", branch: "empty" });
  await new Promise<void>((done) => episode.subscribe((s) => s.matches("active") && done()));
}

describe("RunSession", () => {
  it("agent_start alone begins an equipped run only while none is open: the host then sends the anchor", async () => {
    parts = runtimeParts(false);
    const { episode, run } = session(parts);
    await active(episode);
    expect(run.agentStart(), "a run nothing announced begins").toBe(true);
    expect(run.agentStart(), "a further agent_start continues it").toBe(false);
    run.customMessage("scheduler", false);
    expect(run.specification().startedBy).toEqual({ source: "scheduler" });
    run.ended();
    expect(run.announced({ kind: "prompt", text: "next" })).toBe(true);
    expect(run.agentStart(), "the announced run's own agent_start is a continuation").toBe(false);
    run.ended();
    parts.host.sync({ toolsActive: true, toolsRegistered: true, footer: undefined });
    parts.host.withheldTools = ["patch_state"];
    expect(run.agentStart(), "without State Flow's tools the run is ordinary: no anchor").toBe(false);
    episode.stop();
  });

  it("a run while State Flow is off is ordinary Pi: no resolution, no specification", () => {
    parts = runtimeParts(false);
    const { episode, run } = session(parts);
    expect(run.announced({ kind: "prompt", text: "hello" })).toBe(false);
    run.userMessage("hello");
    run.userMessage("more");
    expect(run.specification().request).toBe("");
    expect(run.unequipped(), "a run while off is an ordinary one").toBe(true);
    episode.stop();
  });

  it("an enabled run keeps the prompt and the added messages, and commits its answer once", async () => {
    parts = runtimeParts(false);
    const { episode, run } = session(parts);
    episode.send({ type: "SESSION_START", reason: "startup", branch: "empty" });
    await new Promise<void>((done) => episode.subscribe((s) => s.matches("active") && done()));
    expect(run.announced({ kind: "prompt", text: "fix the build" })).toBe(true);
    run.userMessage("fix the build");
    run.userMessage("and the tests");
    expect(run.specification()).toMatchObject({ request: "fix the build", added: ["and the tests"] });
    const before = parts.host.recordedRevisions().size;
    await run.commitResponse("done.");
    await run.commitResponse("done.");
    expect(parts.binding.read(0, "session").state.response).toBe("done.");
    expect(parts.host.recordedRevisions().size).toBe(before + 1);
    await expect(run.patchState({ patches: {}, final: true } as never)).resolves.toMatchObject({
      details: { final: true, transition: null },
    });
    episode.stop();
  });
});
