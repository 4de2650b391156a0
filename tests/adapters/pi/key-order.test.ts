// State keeps one key order (the store's) across a resume (issue 29): a patch of several keys, and a
// checkpoint the eighth record folded, read back in the same order the session held, so the model's
// state[0] (and the prompt cache behind it) is not reordered by a restart. Real Pi sessions.
import { describe, expect, it } from "vitest";
import { call, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

describe("key order across a resume", () => {
  it("the contract reads back in the order the session saw, after a multi-key patch and a fold", async () => {
    const h = await harness({ sessionKind: "file" });
    await h.command("/state-flow-start");
    h.script(
      call("patch_state", { session: { contract: { zeta: 1, alpha: 2, mid: { y: 1, b: 2 } } }, final: true }),
      say("a"),
    );
    await h.prompt("several keys at once");
    for (let n = 0; n < 8; n++) {
      h.script(call("patch_state", { session: { contract: { [`k${9 - n}`]: n } }, final: true }), say(`n${n}`));
      await h.prompt(`key ${n}`);
    }
    const before = h.accessor.read(0).state.contract;
    const reopened = await harness({ shareWith: h, openFile: h.session.sessionManager.getSessionFile()! });
    const after = reopened.accessor.read(0).state.contract;
    expect(JSON.stringify(after)).toBe(JSON.stringify(before));
    expect(Object.keys(before).slice(0, 3)).toEqual(["alpha", "k2", "k3"]);
  });
});
