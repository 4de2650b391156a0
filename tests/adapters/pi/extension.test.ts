import { afterEach, describe, expect, it } from "vitest";
import { PiHarness, call, contextText, say } from "../../support/pi-harness.ts";

let h: PiHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe("State Flow in a real Pi session", () => {
  it("manual default: ordinary Pi until /state-flow-start; then patch, final and an accepted answer", async () => {
    h = await PiHarness.create();
    expect(h.accessor.episode()).toBe("off");
    expect(h.activeTools).not.toContain("patch_state");
    await h.command("/state-flow-start");
    expect(h.extensionErrors()).toEqual([]);
    expect(h.accessor.episode()).toBe("active.bootstrap.fromTranscript");
    expect(h.activeTools).toEqual(expect.arrayContaining(["patch_state", "read_state"]));
    h.script(
      call("patch_state", { session: { working: { goal: "demo" } }, final: true }),
      say("Done: goal recorded."),
    );
    await h.prompt("Record the goal");
    expect(h.extensionErrors()).toEqual([]);
    expect(h.accessor.read(0, "session").state).toMatchObject({ working: { goal: "demo" }, response: "Done: goal recorded." });
    expect(h.accessor.read(1, "session").state.working).toEqual({ goal: "demo" });
    expect(h.accessor.episode()).toBe("active.steady");
    const second = contextText(h.contexts[1]!);
    expect(second).toContain('"goal": "demo"');
  });
});
