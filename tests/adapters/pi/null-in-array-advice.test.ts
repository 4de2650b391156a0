// The refusal of a null inside an array reaches the model as its tool result, says what to send
// instead, and the patch written that way is accepted.

import { describe, expect, it } from "vitest";
import { call, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

describe("a null inside an array in patch_state", () => {
  it("is refused with the way to write it; the complete array without the null is accepted", async () => {
    const h = await harness();
    await h.command("/state-flow-start");
    h.script(call("patch_state", { session: { working: { items: [{ id: 1, done: false }, { id: 2 }] } } }));
    h.script(
      // Meant: drop `done` from the first item.
      call("patch_state", { session: { working: { items: [{ id: 1, done: null }, { id: 2 }] } } }),
      call("patch_state", { session: { working: { items: [{ id: 1 }, { id: 2 }] } }, final: true }),
      say("Dropped."),
    );
    await h.prompt("drop done from item 1");
    const [first, refused, advised] = h.toolResults();
    expect(first!.isError).toBe(false);
    expect(refused).toMatchObject({ tool: "patch_state", isError: true });
    expect(refused!.text).toContain(
      "session.working.items[0].done: null inside an array cannot be stored: an array replaces the stored value " +
        "whole, objects in it included (nothing in it merges, so null deletes nothing there), and state never " +
        "holds null. Send the complete array without it: leave that item or key out",
    );
    expect(advised!.isError).toBe(false);
    expect(h.accessor.read(0, "session").state.working).toEqual({ items: [{ id: 1 }, { id: 2 }] });
  });
});
