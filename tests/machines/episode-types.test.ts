import { describe, expect, it } from "vitest";
import { episodeMachine } from "../../machines/episode.ts";
import { EPISODE_ACTORS } from "../../machines/episode-types.ts";

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
