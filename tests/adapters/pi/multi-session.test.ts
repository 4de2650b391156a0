// Several Pi sessions on one store (one agent dir, one project): a refusal caused by another
// session's change to a shared scope says what to do, and doing it works.
import { describe, expect, it } from "vitest";
import { call, harnessFactory, say } from "../../support/pi-harness.ts";

const harness = harnessFactory();

for (const git of [true, false]) {
  describe(`two sessions on one ${git ? "Git" : "file-only"} store`, () => {
    it(
      "a cwd patch refused because another session advanced cwd " + "succeeds after read_state, as the refusal says",
      async () => {
        const a = await harness(git ? {} : { git: false });
        const b = await harness({ shareWith: a, ...(git ? {} : { git: false }) });
        await a.command("/state-flow-start");
        await b.command("/state-flow-start");
        a.script(call("patch_state", { cwd: { contract: { storage: "todos.json" } }, final: true }), say("A done"));
        await a.prompt("A: store todos in a JSON file");

        b.script(
          call("patch_state", { cwd: { contract: { cli: "todo" } } }),
          call("read_state", { scope: "cwd" }),
          call("patch_state", { cwd: { contract: { cli: "todo" } }, final: true }),
          say("B done"),
        );
        await b.prompt("B: the binary is called todo");
        expect(b.extensionErrors()).toEqual([]);
        const results = b.session.messages.filter((m) => m.role === "toolResult") as {
          toolName: string;
          isError: boolean;
          content: { text?: string }[];
        }[];
        const text = (i: number) => results[i]!.content.map((c) => c.text ?? "").join("");
        expect(results.map((r) => [r.toolName, r.isError])).toEqual([
          ["patch_state", true],
          ["read_state", false],
          ["patch_state", false],
        ]);
        expect(text(0)).toMatch(/the cwd scope advanced in another session .* Re-read the current cwd state/);
        expect(JSON.parse(text(1)).state.contract).toEqual({ storage: "todos.json" });
        expect(b.accessor.read(0, "cwd").state.contract).toEqual({ storage: "todos.json", cli: "todo" });
        expect(b.accessor.read(0).state.response).toBe("B done");
        // A's next patch adopts B's cwd the same way (it does not patch cwd, so nothing is refused).
        a.script(call("patch_state", { session: { working: { next: "list" } }, final: true }), say("A again"));
        await a.prompt("A: next");
        expect(a.accessor.read(0, "cwd").state.contract).toEqual({ storage: "todos.json", cli: "todo" });
      },
    );
  });
}
