import { describe, expect, it } from "vitest";
import { episodeMachine } from "../../machines/episode.ts";
import { EPISODE_ACTORS, errorText, retainedOf, type EpisodeMachineEvent } from "../../machines/episode-types.ts";

/** Every invoke id of a machine config, depth first. */
function invokeIds(node: { invoke?: { id?: string } | { id?: string }[]; states?: Record<string, unknown> }): string[] {
  const own = [node.invoke ?? []].flat().flatMap((i) => (i.id ? [i.id] : []));
  return [...own, ...Object.values(node.states ?? {}).flatMap((child) => invokeIds(child as never))];
}

describe("EPISODE_ACTORS", () => {
  it("names exactly the actors the episode invokes (their results are xstate.done/error.actor.<id>)", () => {
    const ids = new Set(invokeIds(episodeMachine.config as never));
    expect([...ids].sort()).toEqual(Object.values(EPISODE_ACTORS).sort());
  });
});

describe("retainedOf", () => {
  const done = (output: unknown) => ({ type: "xstate.done.actor.restore", output }) as EpisodeMachineEvent;
  it("keeps what a restore could not prove, with its revision and the store's words", () => {
    expect(retainedOf(done({ kind: "unproven", revision: "r1", detail: "checksum" }))).toEqual({
      kind: "unproven",
      revision: "r1",
      detail: "checksum",
    });
    expect(retainedOf(done({ kind: "lockBusy", revision: "r2" }))).toEqual({ kind: "lockBusy", revision: "r2" });
    expect(retainedOf(done({ kind: "unanchored" }))).toEqual({ kind: "unanchored", revision: null });
    const failed = { type: "xstate.error.actor.restore", error: new Error("disk gone") } as EpisodeMachineEvent;
    expect(retainedOf(failed)).toEqual({ kind: "unproven", revision: null, detail: "disk gone" });
  });

  it("retains nothing for a restore that selected a state, or for any other event", () => {
    expect(retainedOf(done({ kind: "revision", revision: "r3" }))).toBeNull();
    expect(retainedOf({ type: "START" } as EpisodeMachineEvent)).toBeNull();
    expect([errorText(new Error("a")), errorText("b")]).toEqual(["a", "b"]);
  });
});
